// Package mqtt publishes circuit state to an MQTT broker, for Home
// Assistant: per circuit, a retained state (ON while the circuit is open,
// OFF when closed), its attributes as JSON, an availability topic, and Home
// Assistant MQTT discovery of a binary_sensor with device_class problem.
//
// Sink connects for each transition, for a process that makes one call and
// exits; Conn holds one connection while a process runs (the daemon), with
// an availability topic of its own and a last will saying it is gone. Both
// are the notify.Sink of notify.Rules.MQTT, kept in a package of its own so
// that its client (Eclipse Paho, MQTT v5) is linked only where it is used.
// A Conn also subscribes, for the daemon's health: mqtt: watches
// (Conn.Subscribe, Pool.Subscribe), on the same connection; and, when the
// config asks for controls, publishes Home Assistant buttons and a phase
// sensor per circuit and applies their presses (controls.go, press.go,
// Pool.Control).
package mqtt

import (
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// The payloads.
const (
	On      = "ON"  // the circuit is open: the endpoint has a problem
	Off     = "OFF" // closed
	Online  = "online"
	Offline = "offline"
)

// Origin names the software behind a discovery message, for Home
// Assistant's MQTT info.
type Origin struct {
	Name    string `json:"name"`
	Version string `json:"sw_version,omitempty"`
	URL     string `json:"support_url,omitempty"`
}

// Fusebox is the origin of fusebox's messages at version v.
func Fusebox(v string) Origin {
	return Origin{Name: "fusebox", Version: v, URL: "https://github.com/fusebox-hq/fusebox"}
}

// Topics are where one circuit's state goes.
type Topics struct {
	State, Attributes, Availability string
	// Discovery is Home Assistant's config topic, "" without discovery;
	// Legacy is where fusebox published it before it named the instance,
	// cleared so that the entity without one goes. (A name with a '.' had,
	// before, the topic of the name with '_' for it, which may be another
	// circuit's: it is left as it is.)
	Discovery, Legacy string
}

// TopicsOf returns the topics of circuit under cfg's prefixes.
func TopicsOf(cfg notify.MQTT, circuit string) Topics {
	base := cfg.Prefix + "/" + circuit
	t := Topics{State: base + "/state", Attributes: base + "/attributes", Availability: base + "/availability"}
	if cfg.Discovery != "" {
		t.Discovery = cfg.Discovery + "/binary_sensor/" + nodeID(InstanceOf(cfg)) + "/" + objectID(circuit) + "/config"
		t.Legacy = cfg.Discovery + "/binary_sensor/fusebox_" + legacyID(circuit) + "/config"
	}
	return t
}

// InstanceOf is cfg.Instance, or the host name (as an instance may be
// written), or "fusebox" when there is none.
func InstanceOf(cfg notify.MQTT) string {
	if cfg.Instance != "" {
		return cfg.Instance
	}
	h, _ := os.Hostname()
	h = strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, h)
	if !notify.ValidInstance(h) {
		return "fusebox"
	}
	return h
}

// objectID is the discovery topic's level of circuit (the object ID,
// [a-zA-Z0-9_-] in Home Assistant's discovery topics), one per name: a
// name without '.' keeps the level fusebox always gave it, circuit_NAME,
// and one with a '.' (which the level may not hold) becomes circuit-ESC
// (see escapeID), which no name without one can become, so that a.b and
// a_b are two entities, not one overwriting the other.
func objectID(circuit string) string { return levelID("circuit", circuit) }

// nodeID is the discovery topic's level of one instance, every entity of
// the instance under it: fusebox_INSTANCE, or fusebox-ESC, as objectID.
func nodeID(instance string) string { return levelID("fusebox", instance) }

func levelID(kind, name string) string {
	if !strings.Contains(name, ".") {
		return kind + "_" + name
	}
	return kind + "-" + escapeID(name)
}

// escapeID writes '.' as _2e and '_' as _5f (an escape with '_', as URLs
// have one with '%'), so that two names never give one ID.
func escapeID(s string) string {
	return strings.NewReplacer("_", "_5f", ".", "_2e").Replace(s)
}

// legacyID is how fusebox wrote a name in a discovery topic before it
// kept names apart: '.' as '_'.
func legacyID(s string) string { return strings.ReplaceAll(s, ".", "_") }

// entityID is s as the object part of an entity ID allows it: lowercase
// letters, digits and single underscores, none at either end.
func entityID(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			under = false
			continue
		}
		under = true
	}
	return b.String()
}

// Discovery is the config of a Home Assistant MQTT binary_sensor.
type Discovery struct {
	Name                string `json:"name"`
	UniqueID            string `json:"unique_id"`
	DefaultEntityID     string `json:"default_entity_id"`
	DeviceClass         string `json:"device_class"`
	StateTopic          string `json:"state_topic"`
	PayloadOn           string `json:"payload_on"`
	PayloadOff          string `json:"payload_off"`
	AvailabilityTopic   string `json:"availability_topic,omitempty"`
	PayloadAvailable    string `json:"payload_available,omitempty"`
	PayloadNotAvailable string `json:"payload_not_available,omitempty"`
	// Availability lists the topics of an entity available only while all
	// of them say so (AvailabilityMode "all"), in place of
	// AvailabilityTopic: Home Assistant takes one or the other.
	Availability        []Availability `json:"availability,omitempty"`
	AvailabilityMode    string         `json:"availability_mode,omitempty"`
	JSONAttributesTopic string         `json:"json_attributes_topic,omitempty"`
	EntityCategory      string         `json:"entity_category,omitempty"`
	Device              Device         `json:"device"`
	Origin              Origin         `json:"origin"`
}

// Availability is one topic of a discovery config's availability list.
type Availability struct {
	Topic               string `json:"topic"`
	PayloadAvailable    string `json:"payload_available"`
	PayloadNotAvailable string `json:"payload_not_available"`
}

// HeldBy returns d as the daemon holding serve (its ServeTopic, whose last
// will says offline) publishes it: available while the circuit's topic
// and serve both say online, so that the entity goes unavailable when the
// daemon dies, though the circuit's own topic still says online.
func (d Discovery) HeldBy(serve string) Discovery {
	d.Availability = []Availability{
		{Topic: d.AvailabilityTopic, PayloadAvailable: d.PayloadAvailable, PayloadNotAvailable: d.PayloadNotAvailable},
		{Topic: serve, PayloadAvailable: Online, PayloadNotAvailable: Offline},
	}
	d.AvailabilityMode = "all"
	d.AvailabilityTopic, d.PayloadAvailable, d.PayloadNotAvailable = "", "", ""
	return d
}

// Device groups an instance's circuits under one device in Home Assistant.
type Device struct {
	Identifiers  []string `json:"identifiers"`
	Name         string   `json:"name"`
	Manufacturer string   `json:"manufacturer"`
	Model        string   `json:"model"`
	SWVersion    string   `json:"sw_version,omitempty"`
}

// deviceOf is the device of instance.
func deviceOf(instance string, o Origin) Device {
	return Device{Identifiers: []string{"fusebox:" + instance}, Name: "fusebox on " + instance,
		Manufacturer: "fusebox", Model: "circuit breakers", SWVersion: o.Version}
}

// DiscoveryOf returns the discovery config of circuit on instance, as a
// process that connects for one transition (Sink) publishes it. Its
// unique ID holds both ("fusebox:nas:weather"), its entity ID neither
// instance nor '.' (binary_sensor.fusebox_weather; Home Assistant numbers a
// second host's).
func DiscoveryOf(t Topics, instance, circuit string, o Origin) Discovery {
	return Discovery{
		Name: circuit, UniqueID: "fusebox:" + instance + ":" + circuit,
		DefaultEntityID: "binary_sensor." + entityID("fusebox_"+circuit), DeviceClass: "problem",
		StateTopic: t.State, PayloadOn: On, PayloadOff: Off,
		AvailabilityTopic: t.Availability, PayloadAvailable: Online, PayloadNotAvailable: Offline,
		JSONAttributesTopic: t.Attributes,
		Device:              deviceOf(instance, o), Origin: o,
	}
}

// ServeTopic is where a held connection (Conn) says whether its process
// runs: online, or offline once it stops or its connection is lost.
func ServeTopic(cfg notify.MQTT) string {
	return cfg.Prefix + "/serve/" + InstanceOf(cfg) + "/availability"
}

// serveDiscovery is the config of the binary_sensor that shows ServeTopic:
// a connectivity sensor of the instance's device.
func (p publisher) serveDiscovery() (topic string, d Discovery) {
	if p.cfg.Discovery == "" {
		return "", d
	}
	return p.cfg.Discovery + "/binary_sensor/" + nodeID(p.instance) + "/serve/config", Discovery{
		Name: "daemon", UniqueID: "fusebox:" + p.instance + ":serve",
		DefaultEntityID: "binary_sensor." + entityID("fusebox_serve_"+p.instance), DeviceClass: "connectivity",
		StateTopic: ServeTopic(p.cfg), PayloadOn: Online, PayloadOff: Offline, EntityCategory: "diagnostic",
		Device: deviceOf(p.instance, p.origin), Origin: p.origin,
	}
}

// Attributes is the JSON of a circuit's attributes topic.
type Attributes struct {
	State  breaker.Phase `json:"state"`
	Reason string        `json:"reason,omitempty"`
	Time   time.Time     `json:"changed_at,omitzero"` // zero: never changed (published at the daemon's start)
	Since  time.Time     `json:"down_since,omitzero"`
}

// publisher makes the messages of one broker's config. held marks the
// daemon's (Conn): its circuits' entities follow ServeTopic too.
type publisher struct {
	cfg      notify.MQTT
	instance string
	origin   Origin
	held     bool
}

func newPublisher(cfg notify.MQTT, o Origin) publisher {
	return publisher{cfg: cfg, instance: InstanceOf(cfg), origin: o}
}

// transition returns the messages that publish the circuit's state after
// e, in the order they go out: the discovery config (the legacy one
// cleared first), availability, attributes, state.
func (p publisher) transition(e breaker.Event) []*paho.Publish {
	state := Off
	if e.To == breaker.Open || e.To == breaker.ForcedOpen {
		state = On
	}
	attrs, _ := json.Marshal(Attributes{State: e.To, Reason: e.Reason, Time: e.Time, Since: e.Since})
	t := TopicsOf(p.cfg, e.Circuit)
	var msgs []*paho.Publish
	if t.Discovery != "" {
		d := DiscoveryOf(t, p.instance, e.Circuit, p.origin)
		if p.held {
			d = d.HeldBy(ServeTopic(p.cfg))
		}
		disc, _ := json.Marshal(d)
		msgs = append(msgs, retained(t.Legacy, nil), retained(t.Discovery, disc))
	}
	return append(msgs, retained(t.Availability, []byte(Online)), retained(t.Attributes, attrs), retained(t.State, []byte(state)))
}

func retained(topic string, payload []byte) *paho.Publish {
	return &paho.Publish{Topic: topic, Payload: payload, Retain: true, QoS: 1}
}
