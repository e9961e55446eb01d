package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// outageOf takes c through one outage of the bridge that lasts restart from
// the opening: the circuit opens, each probe fails until restart has passed,
// the first one after closes it, and the bridge stays up for an hour. It
// returns the probes made and when the last one ran, from the opening.
func outageOf(c *circuit, restart time.Duration) (probes int, lastAt time.Duration) {
	c.run("fff") // the bridge goes down: the circuit opens
	down := c.now
	for c.view().Phase != breaker.Closed {
		c.wait(c.view().ReopensIn)
		probes++
		permit := c.mustPermit("probe")
		lastAt, _ = c.now.Since(down)
		c.record(permit, breaker.Outcome{Attempt: 1, Failed: lastAt < restart, Reason: "offline"})
	}
	c.wait(time.Hour) // up for a while
	return probes, lastAt
}

// A bridge that always takes four minutes to come back, under open_for:
// auto: the first outages are probed at 30 s, 1 m, 2 m, 4 m as without it;
// after a few, each outage is probed once, a little past four minutes.
func TestLearnedOpenForConvergesOnTheRecoveryTime(t *testing.T) {
	p := testBreaker()
	p.OpenFor, p.OpenMax, p.LearnOpenFor = 30*time.Second, 10*time.Minute, true
	c := newCircuit(t, p)
	const restart = 4 * time.Minute
	var probes []int
	var lastProbeAt time.Duration
	for range 8 {
		var n int
		n, lastProbeAt = outageOf(c, restart)
		probes = append(probes, n)
	}
	if got := probes[len(probes)-1]; got != 1 {
		t.Errorf("probes per outage %v: want one at the end", probes)
	}
	if lastProbeAt < restart || lastProbeAt > restart*5/4 {
		t.Errorf("the last outage was probed at %s: want a little past %s (probes per outage %v)", lastProbeAt, restart, probes)
	}
	d, how := c.st.LearnedOpenFor(p)
	t.Logf("probes per outage %v; last probe at %s; learned %s (%s)", probes, lastProbeAt, d, how)
}

// The learned period stays between its floor and open_max, and without
// recoveries it is open_for.
func TestLearnedOpenForIsBounded(t *testing.T) {
	p := testBreaker()
	p.OpenFor, p.OpenMax, p.LearnOpenFor = 30*time.Second, 2*time.Minute, true
	var st breaker.State
	if d, _ := st.LearnedOpenFor(p); d != 30*time.Second {
		t.Errorf("nothing learned: %s, want open_for", d)
	}
	st.Recoveries = []breaker.Recovery{{Down: 0, Up: breaker.Duration(time.Second)}}
	if d, _ := st.LearnedOpenFor(p); d != 5*time.Second {
		t.Errorf("a one-second recovery: %s, want the floor of 5s", d)
	}
	st.Recoveries = []breaker.Recovery{{Down: breaker.Duration(time.Hour), Up: breaker.Duration(2 * time.Hour)}}
	if d, _ := st.LearnedOpenFor(p); d != 2*time.Minute {
		t.Errorf("an hour-long recovery: %s, want open_max", d)
	}
}

// Outages that always last 8 s: once learned, each is probed once, past
// 8 s, for good. The failed probes that taught it are kept as evidence, so
// a run of outages the first probe ended never halves the period below an
// outage seen (it used to fall back to 5 s every sixth outage, and that
// probe failed).
func TestLearnedOpenForNeverSettlesBelowTheOutagesSeen(t *testing.T) {
	p := testBreaker()
	p.OpenFor, p.OpenMax, p.LearnOpenFor = 30*time.Second, 5*time.Minute, true
	c := newCircuit(t, p)
	const restart = 8 * time.Second
	var failedProbes []int
	for range 30 {
		n, _ := outageOf(c, restart)
		failedProbes = append(failedProbes, n-1)
		if d, how := c.st.LearnedOpenFor(p); len(failedProbes) > 3 && d < restart {
			t.Fatalf("after outage %d the next is probed at %s (%s), below the %s outages seen; failed probes per outage %v",
				len(failedProbes), d, how, restart, failedProbes)
		}
	}
	for i, n := range failedProbes[5:] {
		if n != 0 {
			t.Errorf("outage %d had %d failed probe(s) after it was learned: failed probes per outage %v", i+5, n, failedProbes)
		}
	}
	d, how := c.st.LearnedOpenFor(p)
	t.Logf("failed probes per outage %v; learned %s (%s)", failedProbes, d, how)
}
