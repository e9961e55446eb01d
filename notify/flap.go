package notify

import (
	"fmt"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// The bounds of a circuit's messages: after flapLimit messages within
// flapWindow, the next says once that the circuit is flapping and the
// changes after it are told by none, until flapQuiet passes without a
// change; then one message says it settled, and how. Whoever can make a
// circuit change state as fast as they like (a flapping MQTT topic) sends
// at most flapLimit+2 messages each flapWindow.
const (
	flapLimit  = 5
	flapWindow = 10 * time.Minute
	flapQuiet  = 5 * time.Minute
)

// flaps limits each circuit's messages, as the constants above say. It is
// safe for concurrent use.
type flaps struct {
	mu       sync.Mutex
	circuits map[string]*flap
}

// flap is one circuit's: a pure function of the transitions and their
// times (the events'), but for the timer that ends a flapping.
type flap struct {
	sent     []time.Time // the times of the messages sent within flapWindow, at most flapLimit
	flapping bool
	start    time.Time     // of the first change counted
	changes  int           // transitions counted since start
	last     breaker.Event // the latest transition
	heard    time.Time     // when it was heard, by this process's clock
	quiet    *time.Timer   // fires flapQuiet after the latest change while flapping
}

// pass takes the transition e and the message Decide made of it (nil for
// none) and returns the message to send: m, or the one saying the
// circuit flaps, or nil while it flaps. settled is called, once, when a
// flapping ends (flapQuiet after its last change, on a timer), with the
// last transition and the message saying how it settled.
func (f *flaps) pass(e breaker.Event, m *Message, settled func(breaker.Event, Message)) *Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.circuits == nil {
		f.circuits = map[string]*flap{}
	}
	c := f.circuits[e.Circuit]
	if e.From == e.To {
		// Not a change (a trip pressed on a tripped circuit, a reset on a
		// closed one): it neither counts as a flap nor holds a flapping
		// open, nor gives a settling its reason.
		if c != nil && c.flapping {
			return nil
		}
		return m
	}
	if c == nil {
		if m == nil {
			return nil
		}
		c = &flap{}
		f.circuits[e.Circuit] = c
	}
	out := c.pass(e, m)
	c.heard = time.Now()
	if c.flapping {
		if c.quiet == nil {
			c.quiet = time.AfterFunc(flapQuiet, func() { f.settle(e.Circuit, settled) })
		} else {
			c.quiet.Reset(flapQuiet)
		}
	} else if len(c.sent) == 0 {
		delete(f.circuits, e.Circuit)
	}
	return out
}

// settle ends the circuit's flapping and hands settled its message, once
// flapQuiet has passed since its last change (a change heard as the timer
// fired has set it again).
func (f *flaps) settle(circuit string, settled func(breaker.Event, Message)) {
	f.mu.Lock()
	c := f.circuits[circuit]
	var m Message
	var last breaker.Event
	ok := c != nil && c.flapping && time.Since(c.heard) >= flapQuiet
	if ok {
		m, last = c.settled(), c.last
		delete(f.circuits, circuit)
	}
	f.mu.Unlock()
	if ok {
		settled(last, m)
	}
}

func (c *flap) pass(e breaker.Event, m *Message) *Message {
	c.last = e
	if c.flapping {
		c.changes++
		return nil
	}
	for len(c.sent) > 0 && !c.sent[0].After(e.Time.Add(-flapWindow)) {
		c.sent = c.sent[1:]
	}
	if m == nil {
		return nil
	}
	if len(c.sent) < flapLimit {
		c.sent = append(c.sent, e.Time)
		return m
	}
	c.flapping, c.start, c.changes = true, c.sent[0], len(c.sent)+1
	c.sent = nil
	return &Message{Circuit: e.Circuit, Kind: Flapping, Time: e.Time, Since: c.start, Reason: e.Reason, Changes: c.changes}
}

// settled is the message that ends a flapping: how many changes, over
// how long, and the state it settled in.
func (c *flap) settled() Message {
	e := c.last
	return Message{Circuit: e.Circuit, Kind: Settled, Time: e.Time, Since: c.start, Reason: e.Reason,
		Changes: c.changes, Back: e.To == breaker.Closed}
}

// flapText is the sentence of a Flapping or Settled message.
func (m Message) flapText() string {
	span := round(m.Time.Sub(m.Since)) // not Down: a flapping circuit was not down all along
	if m.Kind == Flapping {
		return fmt.Sprintf("%s is flapping: %d changes in %s; no more messages until it settles (%s)", m.Circuit, m.Changes, span, m.Reason)
	}
	state := "down"
	if m.Back {
		state = "up"
	}
	return fmt.Sprintf("%s settled %s after %d changes in %s: %s", m.Circuit, state, m.Changes, span, m.Reason)
}
