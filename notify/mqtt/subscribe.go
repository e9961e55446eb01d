package mqtt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"

	"github.com/fusebox-hq/fusebox/notify"
)

// subscribeTimeout bounds one SUBSCRIBE or UNSUBSCRIBE on a live
// connection.
const subscribeTimeout = 10 * time.Second

// The bounds of what a subscription hears. Anyone who may publish on the
// broker may send a watched topic anything; a Conn asks the broker (MQTT
// v5's Maximum Packet Size on CONNECT) to drop, for it, any packet larger
// than MaxPacket, and drops itself, before any handler sees it, a payload
// larger than MaxMessage (a broker that does not honour the first, or a
// message between the two), with a warning at most once per topic every
// oversizedEvery.
const (
	MaxMessage     = 256 << 10
	MaxPacket      = 1 << 20
	oversizedEvery = 10 * time.Minute
)

// handler is one Subscribe's: a pointer, so that stopping removes this
// one and not another of the same topic.
type handler struct{ fn func(payload []byte) }

// Subscribe has fn hear every message published at topic (one topic, no
// wildcards), retained ones included: on this connection and on every one
// after it, the broker sends the message it retains at topic as it takes
// the subscription. fn runs on the connection's goroutine, one message at
// a time in the order they came, and must be quick. A lost connection
// says nothing to fn: what it heard last still holds. stop ends it.
func (c *Conn) Subscribe(topic string, fn func(payload []byte)) (stop func()) {
	h := &handler{fn: fn}
	c.mu.Lock()
	first := len(c.subs[topic]) == 0
	c.subs[topic] = append(c.subs[topic], h)
	live := c.up && !c.closed
	if first && live {
		c.bg.Add(1)
	}
	c.mu.Unlock()
	if first && live {
		go func() {
			defer c.bg.Done()
			c.subscribe(c.cm, []string{topic})
		}()
	}
	return func() { c.unsubscribe(topic, h) }
}

func (c *Conn) unsubscribe(topic string, h *handler) {
	c.mu.Lock()
	hs := slices.DeleteFunc(c.subs[topic], func(x *handler) bool { return x == h })
	last := len(hs) == 0 && len(c.subs[topic]) > 0
	if len(hs) == 0 {
		delete(c.subs, topic)
		delete(c.big, topic)
	} else {
		c.subs[topic] = hs
	}
	live := c.up && !c.closed
	c.mu.Unlock()
	if last && live {
		ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
		defer cancel()
		if _, err := c.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{topic}}); err != nil {
			c.log.Debug("mqtt: unsubscribe", "topic", topic, "err", err)
		}
	}
}

// subscribe asks the broker for topics on cm's connection. A refusal is
// logged; the next connection asks again.
func (c *Conn) subscribe(cm *autopaho.ConnectionManager, topics []string) {
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	s := &paho.Subscribe{}
	for _, t := range topics {
		o := paho.SubscribeOptions{Topic: t, QoS: 1}
		if c.controls && t == CommandTopic(c.p.cfg) {
			// A press retained at the command topic is not pressed
			// again on every connection (MQTT v5's retain handling 2).
			o.RetainHandling = 2
		}
		s.Subscriptions = append(s.Subscriptions, o)
	}
	ack, err := cm.Subscribe(ctx, s)
	if err == nil {
		for i, code := range ack.Reasons {
			if code >= 0x80 && i < len(topics) {
				err = errors.Join(err, fmt.Errorf("%s refused with reason code 0x%02x", topics[i], code))
			}
		}
	}
	if err != nil {
		c.log.Warn("mqtt: the broker did not take the subscription; asking again on the next connection", "topics", topics, "err", err)
	}
}

// topics returns the topics subscribed to.
func (c *Conn) topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.subs))
	for t := range c.subs {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// received hands a message to the handlers of its topic, unless it is
// larger than MaxMessage.
func (c *Conn) received(r paho.PublishReceived) (bool, error) {
	topic := r.Packet.Topic
	c.mu.Lock()
	hs := slices.Clone(c.subs[topic])
	if len(hs) > 0 && len(r.Packet.Payload) > MaxMessage {
		c.tooLarge(topic, len(r.Packet.Payload), time.Now())
		hs = nil
	}
	c.mu.Unlock()
	for _, h := range hs {
		h.fn(slices.Clone(r.Packet.Payload))
	}
	return len(hs) > 0, nil
}

// tooLarge notes a message of size bytes at topic dropped, and warns of
// it (with those dropped quietly since the last warning) unless the topic
// was warned of within oversizedEvery. c.mu is held; topic is subscribed
// to, so that the map is as small as the subscriptions.
func (c *Conn) tooLarge(topic string, size int, now time.Time) {
	o := c.big[topic]
	if o == nil {
		o = &quiet{}
		c.big[topic] = o
	}
	if log, before := o.note(now, oversizedEvery); log {
		c.log.Warn(fmt.Sprintf("mqtt: a message larger than %d KiB is dropped, unread; this topic's next ones are counted quietly for %s", MaxMessage>>10, oversizedEvery),
			"topic", topic, "bytes", size, "dropped", before+1)
	}
}

// Subscribe is Conn.Subscribe on cfg's connection, dialling it when there
// is none; it fails once the pool is closed or when cfg's broker cannot
// be dialled.
func (p *Pool) Subscribe(cfg notify.MQTT, topic string, fn func(payload []byte)) (stop func(), err error) {
	c := p.conn(cfg)
	if c == nil {
		return nil, errors.New(brokerName(cfg) + ": no connection")
	}
	return c.Subscribe(topic, fn), nil
}
