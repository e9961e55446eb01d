package mqtt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// Sink publishes circuit state to one broker. A Sink connects for each
// Send and disconnects after it: a short-lived process holds no connection.
type Sink struct {
	p publisher
}

var _ notify.Sink = (*Sink)(nil)

// New returns the sink for cfg, its discovery messages naming o.
func New(cfg notify.MQTT, o Origin) *Sink { return &Sink{p: newPublisher(cfg, o)} }

// SinkFor returns the notify.WithSink factory of a process that connects
// for each transition: a Sink when the rules name a broker, else nil.
func SinkFor(o Origin) func(string, notify.Rules) notify.Sink {
	return func(_ string, r notify.Rules) notify.Sink {
		if r.MQTT == nil {
			return nil
		}
		return New(*r.MQTT, o)
	}
}

func (s *Sink) String() string { return brokerName(s.p.cfg) }

func brokerName(cfg notify.MQTT) string {
	u, err := url.Parse(cfg.Broker)
	if err != nil {
		return "mqtt"
	}
	return "mqtt " + u.Host
}

// Send publishes the circuit's state after the transition e, whether or not
// it sends a message: the state follows the circuit.
func (s *Sink) Send(ctx context.Context, e breaker.Event, _ *notify.Message) error {
	if e.Kind != breaker.EventTransition {
		return nil
	}
	return s.publish(ctx, TopicsOf(s.p.cfg, e.Circuit).Availability, s.p.transition(e))
}

// publish connects, publishes msgs in order (each acknowledged) and
// disconnects; ctx bounds it all. Should the process die before it
// disconnects, the broker publishes offline at will.
func (s *Sink) publish(ctx context.Context, will string, msgs []*paho.Publish) error {
	u, err := url.Parse(s.p.cfg.Broker)
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
	c := paho.NewClient(paho.ClientConfig{Conn: &packetLimit{Conn: conn, max: MaxPacket}, OnClientError: func(error) {}})
	cp := &paho.Connect{
		ClientID:    fmt.Sprintf("fusebox-%d-%x", os.Getpid(), rand.Uint32()),
		KeepAlive:   30,
		CleanStart:  true,
		WillMessage: &paho.WillMessage{Topic: will, Payload: []byte(Offline), Retain: true, QoS: 1},
	}
	if s.p.cfg.Username != "" {
		cp.Username, cp.UsernameFlag = s.p.cfg.Username, true
	}
	if s.p.cfg.Password != "" {
		cp.Password, cp.PasswordFlag = []byte(s.p.cfg.Password), true
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
