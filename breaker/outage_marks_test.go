package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// The marks an outage history reads from the stored events: when the
// failures that opened a circuit began, which failures a caller sat through
// to a timeout, and the skip total at each transition.

func TestOpeningSaysWhenItsFailuresBegan(t *testing.T) {
	tests := []struct {
		name     string
		outcomes string // one attempt a second
		since    int    // seconds after the start
	}{
		{"three failures in a row", "fff", 0},
		{"a success restarts the streak", "ffsfff", 3},
		{"neutral failures neither start nor end it", "nfnff", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCircuit(t, testBreaker())
			start := c.now.Wall
			for _, r := range tt.outcomes {
				c.run(string(r))
				c.wait(time.Second)
			}
			c.wantPhase(breaker.Open)
			e := c.lastTransition()
			if want := start.Add(time.Duration(tt.since) * time.Second); !e.Since.Equal(want) {
				t.Errorf("Since = %s, want %s", e.Since, want)
			}
		})
	}
}

func TestFailingSinceIsForgottenOnClose(t *testing.T) {
	c := newCircuit(t, testBreaker())
	c.trip()
	c.wait(10 * time.Second)
	p := c.mustPermit("probe")
	c.record(p, breaker.Outcome{Attempt: 1})
	c.wantPhase(breaker.Closed)
	if !c.st.FailingSince.IsZero() {
		t.Errorf("FailingSince = %s after closing, want zero", c.st.FailingSince)
	}
	c.wait(time.Hour)
	c.trip()
	if got := c.lastTransition().Since; !got.Equal(c.now.Wall) {
		t.Errorf("the second opening's Since = %s, want %s (its own failures)", got, c.now.Wall)
	}
}

func TestFailureEventSaysItTimedOut(t *testing.T) {
	c := newCircuit(t, testBreaker())
	c.record(c.mustPermit(""), breaker.Outcome{Failed: true, Attempt: 1, Reason: "slow", TimedOut: true})
	c.record(c.mustPermit(""), breaker.Outcome{Failed: true, Attempt: 2, Reason: "refused"})
	if len(c.events) != 2 || !c.events[0].TimedOut || c.events[1].TimedOut {
		t.Fatalf("events = %+v, want the first timed out and the second not", c.events)
	}
}

func TestEveryTransitionOfAnOutageSaysWhenItBegan(t *testing.T) {
	c := newCircuit(t, testBreaker())
	start := c.now.Wall
	c.trip()
	c.wait(10 * time.Second)
	c.record(c.mustPermit("p1"), breaker.Outcome{Failed: true, Attempt: 1, Reason: "still down"})
	if e := c.lastTransition(); e.From != breaker.HalfOpen || !e.Since.Equal(start) {
		t.Errorf("failed probe's transition = %+v, want Since %s", e, start)
	}
	c.wait(20 * time.Second)
	c.record(c.mustPermit("p2"), breaker.Outcome{Attempt: 1})
	if e := c.lastTransition(); e.To != breaker.Closed || !e.Since.Equal(start) {
		t.Errorf("closing = %+v, want Since %s", e, start)
	}
	c.events = c.st.Reset(c.now, "")
	if e := c.lastTransition(); !e.Since.IsZero() {
		t.Errorf("a reset of a circuit with no failures has Since %s", e.Since)
	}
}
