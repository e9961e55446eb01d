// Package notify tells people about circuit transitions: a circuit opened
// (the endpoint is down), closed (it is back), or its probe failed N times.
// Decide is the rule, a pure function of the outage's stored events; a
// Sender runs it on the transitions a process made itself (from
// fusebox.WithListener), so when several processes share a circuit exactly
// one notifies: the one whose Update produced the transition. Sinks deliver:
// webhooks (generic JSON, ntfy, Gotify, Home Assistant), commands, and what
// subpackages add (notify/mqtt). Heartbeat pings are separate (Ping).
package notify

import (
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Kind is what a Message announces.
type Kind string

// The kinds of message.
const (
	Opened      Kind = "opened"       // the circuit opened: its endpoint is down
	Closed      Kind = "closed"       // it closed again: the endpoint is back
	ProbeFailed Kind = "probe_failed" // the outage goes on: the Nth probe failed
	// Flapping says the circuit changed state too often (Changes times
	// since Since): the changes after it send nothing until it settles.
	Flapping Kind = "flapping"
	// Settled ends a flapping: the circuit has not changed for a while,
	// and is back (Back) or down.
	Settled Kind = "settled"
)

// Message is one notification, about one transition.
type Message struct {
	Circuit string    `json:"circuit"`
	Kind    Kind      `json:"kind"`
	Time    time.Time `json:"time"`  // of the transition
	Since   time.Time `json:"since"` // the outage's first failure
	// Down is how long the endpoint has been down (Time-Since): for
	// Closed, the most it was down, since it came back at some moment
	// after LastFailureAt.
	Down time.Duration `json:"-"`
	// LastFailureAt is the outage's last failure before the transition (a
	// failed attempt or probe); for Closed, DownAtLeast = LastFailureAt -
	// Since is the least it was down.
	LastFailureAt time.Time     `json:"last_failure_at,omitzero"`
	DownAtLeast   time.Duration `json:"-"`
	Reason        string        `json:"reason,omitempty"`       // the transition's
	LastFailure   string        `json:"last_failure,omitempty"` // the reason of the outage's last failure before it
	FailedProbes  int           `json:"failed_probes"`
	Changes       int           `json:"changes,omitempty"` // a Flapping or Settled message's: transitions since Since
	Back          bool          `json:"-"`                 // a Settled message's: it settled closed
}

// Up reports whether the message says the circuit is back: Closed, or
// Settled closed.
func (m Message) Up() bool { return m.Kind == Closed || m.Kind == Settled && m.Back }

// Title is a one-line headline: "weather is down".
func (m Message) Title() string {
	switch {
	case m.Kind == Closed:
		return m.Circuit + " is back"
	case m.Kind == ProbeFailed:
		return m.Circuit + " is still down"
	case m.Kind == Flapping:
		return m.Circuit + " is flapping"
	case m.Kind == Settled && m.Back:
		return m.Circuit + " settled: back"
	case m.Kind == Settled:
		return m.Circuit + " settled: down"
	}
	return m.Circuit + " is down"
}

// Text says what happened in a sentence.
func (m Message) Text() string {
	since := m.Since.Local().Format("15:04:05")
	switch m.Kind {
	case Flapping, Settled:
		return m.flapText()
	case Closed:
		down := round(m.Down).String()
		if lo := round(m.DownAtLeast); m.DownAtLeast > 0 && lo != round(m.Down) {
			down = lo.String() + "–" + down // back at some moment between its last failure and this
		}
		return fmt.Sprintf("%s is back after %s down (since %s): %s", m.Circuit, down, since, m.Reason)
	case ProbeFailed:
		return fmt.Sprintf("%s is still down after %d failed probes, %s since %s: %s", m.Circuit, m.FailedProbes, round(m.Down), since, m.why())
	}
	return fmt.Sprintf("%s is down since %s (%s): %s", m.Circuit, since, round(m.Down), m.why())
}

func (m Message) why() string {
	if m.LastFailure != "" {
		return m.LastFailure
	}
	return m.Reason
}

func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// believable is the earliest time an outage's start is taken for: a clock
// that says year 1 or 1970 tells no duration (history ignores such times too).
var believable = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Decide says which message, if any, the transition e sends. outage holds
// the circuit's events of the outage that e belongs to, oldest first, e
// included or not (those from e.Since on, as Store.Events gives them): only
// the transitions before e count.
func Decide(r Rules, outage []breaker.Event, e breaker.Event) (Message, bool) {
	if e.Kind != breaker.EventTransition || e.Since.IsZero() {
		return Message{}, false // not an outage's: a trip or reset by hand of a healthy circuit
	}
	if e.Since.Before(believable) || e.Since.After(e.Time) {
		return Message{}, false // a clock beyond belief: no duration it gives can be told
	}
	start := e.Since
	reached := func(t time.Time) bool { return t.Sub(start) >= r.After }
	announced, probes, last, lastAt := false, 0, "", time.Time{}
	for _, x := range outage {
		if x.Kind == e.Kind && x.To == e.To && x.Time.Equal(e.Time) {
			break // e itself: what follows is later
		}
		if x.Kind == breaker.EventFailure && !x.Time.Before(start) {
			last, lastAt = x.Reason, x.Time
		}
		if x.Kind != breaker.EventTransition || x.To != breaker.Open || x.Time.Before(start) {
			continue
		}
		lastAt = x.Time // a failed probe, or the failure that opened it
		if reached(x.Time) {
			announced = true
		}
		if x.From == breaker.HalfOpen {
			probes++
		}
	}
	m := Message{Circuit: e.Circuit, Time: e.Time, Since: start, Down: e.Time.Sub(start), Reason: e.Reason, LastFailure: last, FailedProbes: probes}
	if !lastAt.IsZero() && !lastAt.After(e.Time) {
		m.LastFailureAt, m.DownAtLeast = lastAt, lastAt.Sub(start)
	}
	switch e.To {
	case breaker.Open:
		if e.From == breaker.HalfOpen {
			m.FailedProbes++
		}
		switch {
		case !reached(e.Time):
			return Message{}, false
		case !announced:
			m.Kind = Opened
			return m, true
		case e.From == breaker.HalfOpen && r.ProbeFailed > 0 && m.FailedProbes == r.ProbeFailed:
			m.Kind = ProbeFailed
			return m, true
		}
	case breaker.Closed:
		if announced {
			m.Kind = Closed
			return m, true
		}
	}
	return Message{}, false
}
