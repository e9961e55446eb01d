package breaker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Explain follows the circuit through an outage, saying at each moment what
// a call would do and why.
func TestExplainSaysWhatACallWouldDo(t *testing.T) {
	c := newCircuit(t, testBreaker())
	check := func(what string, action breaker.Action, until time.Time, why ...string) {
		t.Helper()
		v := c.st.Explain(c.policy, c.now)
		if v.Action != action || !v.Until.Equal(until) {
			t.Errorf("%s: %s until %v (%q); want %s until %v", what, v.Action, v.Until, v.Why, action, until)
		}
		for _, w := range why {
			if !strings.Contains(v.Why, w) {
				t.Errorf("%s: %q does not say %q", what, v.Why, w)
			}
		}
	}
	check("a new circuit", breaker.ActionRun, time.Time{}, "closed")
	c.run("f")
	check("one failure", breaker.ActionRun, time.Time{}, "closed: 1 of the 3 consecutive failures that open it", "last: boom")
	c.run("ff")
	opened := c.now.Wall
	check("opened", breaker.ActionSkip, opened.Add(10*time.Second), "opened at", "by 3 consecutive failures", "last: boom")

	c.now = c.now.Add(11 * time.Second)
	check("its open period over", breaker.ActionProbe, time.Time{}, "half-open", "this call would be the probe")
	p := c.mustPermit("probe-1") // another caller takes the probe
	check("the probe taken", breaker.ActionSkip, c.now.Wall.Add(5*time.Second), "another caller holds the probe")
	c.record(p, breaker.Outcome{Attempt: 1, Failed: true, Reason: "still down"})
	check("a failed probe", breaker.ActionSkip, c.now.Wall.Add(20*time.Second), "last: still down", "1 failed probe(s) since")

	c.now = c.now.Add(21 * time.Second)
	c.record(c.mustPermit("probe-2"), breaker.Outcome{Attempt: 1})
	check("a probe that succeeded", breaker.ActionRun, time.Time{}, "closed")

	c.events = append(c.events, c.st.Trip(c.now, 0)...)
	check("tripped until reset", breaker.ActionSkip, time.Time{}, "tripped for maintenance", "until reset")
	c.events = append(c.events, c.st.Trip(c.now, time.Minute)...)
	check("tripped for a minute", breaker.ActionSkip, c.now.Wall.Add(time.Minute), "tripped for maintenance")
	c.now = c.now.Add(2 * time.Minute)
	check("the trip over", breaker.ActionRun, time.Time{}, "the trip for maintenance has ended")
}
