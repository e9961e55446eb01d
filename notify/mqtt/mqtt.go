// Package mqtt publishes circuit state to an MQTT broker, for Home
// Assistant: per circuit, a retained state (ON while the circuit is open,
// OFF when closed), its attributes as JSON, an availability topic with a
// last will, and Home Assistant MQTT discovery of a binary_sensor with
// device_class problem. It is the notify.Sink of notify.Rules.MQTT, kept in
// a package of its own so that its client (Eclipse Paho, MQTT v5) is linked
// only where it is used.
package mqtt

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/notify"
)

// The payloads.
const (
	On           = "ON"  // the circuit is open: the endpoint has a problem
	Off          = "OFF" // closed
	Online       = "online"
	Offline      = "offline"
	manufacturer = "fusebox"
)

// Topics are where one circuit's state goes.
type Topics struct {
	State, Attributes, Availability string
	// Discovery is Home Assistant's config topic; "" without discovery.
	Discovery string
}

// TopicsOf returns the topics of circuit under cfg's prefixes.
func TopicsOf(cfg notify.MQTT, circuit string) Topics {
	base := cfg.Prefix + "/" + circuit
	t := Topics{State: base + "/state", Attributes: base + "/attributes", Availability: base + "/availability"}
	if cfg.Discovery != "" {
		t.Discovery = cfg.Discovery + "/binary_sensor/" + ObjectID(circuit) + "/config"
	}
	return t
}

// ObjectID is the circuit's id in Home Assistant: "fusebox_" and the name
// with the characters discovery does not allow ('.') as '_'.
func ObjectID(circuit string) string {
	return "fusebox_" + strings.ReplaceAll(circuit, ".", "_")
}

// Discovery is the config of a Home Assistant MQTT binary_sensor.
type Discovery struct {
	Name                string `json:"name"`
	UniqueID            string `json:"unique_id"`
	ObjectID            string `json:"object_id"`
	DeviceClass         string `json:"device_class"`
	StateTopic          string `json:"state_topic"`
	PayloadOn           string `json:"payload_on"`
	PayloadOff          string `json:"payload_off"`
	AvailabilityTopic   string `json:"availability_topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
	JSONAttributesTopic string `json:"json_attributes_topic"`
	Device              Device `json:"device"`
}

// Device groups every circuit under one device in Home Assistant.
type Device struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"manufacturer"`
}

// DiscoveryOf returns the discovery config of circuit.
func DiscoveryOf(t Topics, circuit string) Discovery {
	return Discovery{
		Name: circuit, UniqueID: ObjectID(circuit), ObjectID: ObjectID(circuit), DeviceClass: "problem",
		StateTopic: t.State, PayloadOn: On, PayloadOff: Off,
		AvailabilityTopic: t.Availability, PayloadAvailable: Online, PayloadNotAvailable: Offline,
		JSONAttributesTopic: t.Attributes,
		Device:              Device{Identifiers: []string{"fusebox"}, Name: "fusebox", Manufacturer: manufacturer},
	}
}

// Attributes is the JSON of a circuit's attributes topic.
type Attributes struct {
	State  fusebox.Phase `json:"state"`
	Reason string        `json:"reason,omitempty"`
	Time   time.Time     `json:"changed_at"`
	Since  time.Time     `json:"down_since,omitzero"`
}

// Sink publishes circuit state to one broker. A Sink connects for each
// Send and disconnects after it: a short-lived process holds no connection.
type Sink struct {
	cfg notify.MQTT
}

var _ notify.Sink = (*Sink)(nil)

// New returns the sink for cfg.
func New(cfg notify.MQTT) *Sink { return &Sink{cfg: cfg} }

// ForRules is the notify.WithSink factory: a Sink when the rules name a
// broker, else nil.
func ForRules(_ string, r notify.Rules) notify.Sink {
	if r.MQTT == nil {
		return nil
	}
	return New(*r.MQTT)
}

func (s *Sink) String() string {
	u, err := url.Parse(s.cfg.Broker)
	if err != nil {
		return "mqtt"
	}
	return "mqtt " + u.Host
}

// Send publishes the circuit's state after the transition e, whether or not
// it sends a message: the state follows the circuit.
func (s *Sink) Send(ctx context.Context, e fusebox.Event, _ *notify.Message) error {
	if e.Kind != fusebox.EventTransition {
		return nil
	}
	state := Off
	if e.To == fusebox.Open || e.To == fusebox.ForcedOpen {
		state = On
	}
	attrs, _ := json.Marshal(Attributes{State: e.To, Reason: e.Reason, Time: e.Time, Since: e.Since})
	t := TopicsOf(s.cfg, e.Circuit)
	msgs := []*paho.Publish{}
	if t.Discovery != "" {
		disc, _ := json.Marshal(DiscoveryOf(t, e.Circuit))
		msgs = append(msgs, retained(t.Discovery, disc))
	}
	msgs = append(msgs, retained(t.Availability, []byte(Online)), retained(t.Attributes, attrs), retained(t.State, []byte(state)))
	return s.publish(ctx, t, msgs)
}

func retained(topic string, payload []byte) *paho.Publish {
	return &paho.Publish{Topic: topic, Payload: payload, Retain: true, QoS: 1}
}

// publish connects, publishes msgs in order (each acknowledged) and
// disconnects; ctx bounds it all.
func (s *Sink) publish(ctx context.Context, t Topics, msgs []*paho.Publish) error {
	u, err := url.Parse(s.cfg.Broker)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl) // a broker that accepts and then says nothing cannot hold us
	}
	c := paho.NewClient(paho.ClientConfig{Conn: conn, OnClientError: func(error) {}})
	cp := &paho.Connect{
		ClientID:   fmt.Sprintf("fusebox-%d-%x", os.Getpid(), rand.Uint32()),
		KeepAlive:  30,
		CleanStart: true,
		// Should this process die before it disconnects, the broker marks
		// the circuit's state unavailable rather than leave it stale.
		WillMessage: &paho.WillMessage{Topic: t.Availability, Payload: []byte(Offline), Retain: true, QoS: 1},
	}
	if s.cfg.Username != "" {
		cp.Username, cp.UsernameFlag = s.cfg.Username, true
	}
	if s.cfg.Password != "" {
		cp.Password, cp.PasswordFlag = []byte(s.cfg.Password), true
	}
	ack, err := c.Connect(ctx, cp)
	if err != nil {
		conn.Close()
		if ack != nil {
			return fmt.Errorf("connect: refused (reason %d)", ack.ReasonCode)
		}
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Disconnect(&paho.Disconnect{ReasonCode: 0})
	for _, m := range msgs {
		if _, err := c.Publish(ctx, m); err != nil {
			return fmt.Errorf("publish %s: %w", m.Topic, err)
		}
	}
	return nil
}
