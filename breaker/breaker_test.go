package breaker_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// needsLock reports whether err is Decide's answer that the decision must
// be made under the lock: an error, but no ErrOpen.
func needsLock(err error) bool { return err != nil && !errors.Is(err, breaker.ErrOpen) }

// bootA is "now" at the start of every breaker test: noon, three hours after
// the machine booted.
var bootA = breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: 3 * time.Hour}

// testBreaker opens after 3 failures for 10s, doubling per failed probe up
// to a minute, with one probe holding a 5s lease.
func testBreaker() breaker.Policy {
	return fusebox.Policy{Breaker: breaker.Policy{
		TripAfter: 3, OpenFor: 10 * time.Second, OpenMultiplier: 2, OpenMax: time.Minute,
		Probes: 1, ProbeLease: 5 * time.Second,
	}}.WithDefaults().Breaker
}

// circuit drives one State the way Do and a Store do, with a clock the test
// moves by hand.
type circuit struct {
	t      *testing.T
	policy breaker.Policy
	st     breaker.State
	now    breaker.Instant
	events []breaker.Event
}

func newCircuit(t *testing.T, p breaker.Policy) *circuit {
	return &circuit{t: t, policy: p, st: breaker.State{Name: "api"}, now: bootA}
}

// permit asks whether an attempt may run: lock-free first, as Do does, then
// under the lock when Decide says so. lease names the probe lease.
func (c *circuit) permit(lease string) (breaker.Permit, error) {
	p, err := c.st.Decide(c.now)
	if !needsLock(err) {
		return p, err
	}
	p, ev, err := c.st.Acquire(c.policy, c.now, lease, false)
	c.events = append(c.events, ev...)
	return p, err
}

func (c *circuit) mustPermit(lease string) breaker.Permit {
	c.t.Helper()
	p, err := c.permit(lease)
	if err != nil {
		c.t.Fatalf("no permit at phase %s: %v", c.view().Phase, err)
	}
	return p
}

func (c *circuit) record(p breaker.Permit, o breaker.Outcome) {
	c.events = append(c.events, c.st.Record(c.policy, c.now, p, o)...)
}

// run makes one attempt per letter: s succeeds, f fails, n fails neutrally
// (no network here, or a 4xx).
func (c *circuit) run(outcomes string) {
	c.t.Helper()
	for i, r := range outcomes {
		p := c.mustPermit("")
		o := breaker.Outcome{Attempt: i + 1, Reason: "boom"}
		switch r {
		case 'f':
			o.Failed = true
		case 'n':
			o.Failed, o.Neutral = true, true
		}
		c.record(p, o)
	}
}

// trip opens a fresh circuit with TripAfter failures.
func (c *circuit) trip() {
	c.t.Helper()
	c.run(strings.Repeat("f", c.policy.TripAfter))
	c.wantPhase(breaker.Open)
}

func (c *circuit) wait(d time.Duration) { c.now = testenv.After(c.now, d) }

func (c *circuit) view() breaker.View { return c.st.View(c.now) }

func (c *circuit) wantPhase(want breaker.Phase) {
	c.t.Helper()
	if got := c.view().Phase; got != want {
		c.t.Fatalf("phase = %s, want %s", got, want)
	}
}

func (c *circuit) wantReopensIn(want time.Duration) {
	c.t.Helper()
	if got := c.view().ReopensIn; got != want {
		c.t.Fatalf("ReopensIn = %s, want %s", got, want)
	}
}

func (c *circuit) lastTransition() breaker.Event {
	c.t.Helper()
	for i := len(c.events) - 1; i >= 0; i-- {
		if c.events[i].Kind == breaker.EventTransition {
			return c.events[i]
		}
	}
	c.t.Fatal("no transition recorded")
	return breaker.Event{}
}

func TestBreakerTripsAfterConsecutiveFailures(t *testing.T) {
	tests := []struct {
		name     string
		outcomes string
		want     breaker.Phase
	}{
		{"a new circuit is closed", "", breaker.Closed},
		{"two failures leave it closed", "ff", breaker.Closed},
		{"the third consecutive failure opens it", "fff", breaker.Open},
		{"a success restarts the count", "ffsff", breaker.Closed},
		{"neutral failures do not count", "ffnnnn", breaker.Closed},
		{"neutral failures do not restart the count", "ffnf", breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCircuit(t, testBreaker())
			c.run(tt.outcomes)
			c.wantPhase(tt.want)
		})
	}
}

func TestBreakerTripsOnFailureRate(t *testing.T) {
	tests := []struct {
		name     string
		rate     breaker.FailureRate
		outcomes string
		want     breaker.Phase
	}{
		{"fewer attempts than MinAttempts never trip", breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 4}, "fff", breaker.Closed},
		{"half the window failing trips at 50%", breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 4}, "sfsf", breaker.Open},
		{"a quarter failing stays closed", breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 4}, "ssfs", breaker.Closed},
		{"outcomes older than the window are forgotten", breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 4}, "ssfsf", breaker.Open},
		{"failures need not be consecutive to trip", breaker.FailureRate{Threshold: 0.5, Window: 6, MinAttempts: 6}, "sfsfsf", breaker.Open},
		{"consecutive failures alone do not trip", breaker.FailureRate{Threshold: 0.8, Window: 10, MinAttempts: 1}, "sssssfff", breaker.Closed},
		{"neutral failures do not count", breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 2}, "snnnn", breaker.Closed},
		{"exactly the threshold trips: 55 of 100", breaker.FailureRate{Threshold: 0.55, Window: 100, MinAttempts: 100}, strings.Repeat("s", 45) + strings.Repeat("f", 55), breaker.Open},
		{"exactly the threshold trips: 7 of 25 at 28%", breaker.FailureRate{Threshold: 0.28, Window: 25, MinAttempts: 25}, strings.Repeat("s", 18) + strings.Repeat("f", 7), breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testBreaker()
			p.FailureRate = &tt.rate
			c := newCircuit(t, p)
			c.run(tt.outcomes)
			c.wantPhase(tt.want)
		})
	}
	t.Run("the reason gives the counts", func(t *testing.T) {
		p := testBreaker()
		p.FailureRate = &breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 4}
		c := newCircuit(t, p)
		c.run("ssfsf")
		if got := c.lastTransition().Reason; got != "2 of the last 4 attempts failed" {
			t.Errorf("reason = %q", got)
		}
	})
}

func TestBreakerOpenPeriod(t *testing.T) {
	t.Run("an open circuit refuses calls until its period ends", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.wait(4 * time.Second)
		_, err := c.permit("")
		var oe *breaker.OpenError
		if !errors.As(err, &oe) || !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("permit error = %v, want an *OpenError matching ErrOpen", err)
		}
		if oe.Phase != breaker.Open || oe.ReopensIn != 6*time.Second || oe.Probing || oe.Name != "api" {
			t.Errorf("OpenError = %+v", oe)
		}
		if want := "circuit api is open (probe in 6s)"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("the opening event says why and for how long", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		e := c.lastTransition()
		if e.From != breaker.Closed || e.To != breaker.Open || time.Duration(e.For) != 10*time.Second || e.Reason != "3 consecutive failures" || !e.Time.Equal(noon) {
			t.Errorf("event = %+v", e)
		}
		if !c.st.OpenUntil.Equal(noon.Add(10 * time.Second)) {
			t.Errorf("OpenUntil = %s", c.st.OpenUntil)
		}
	})
	t.Run("the open period ends by itself: View says half-open with no call", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.wait(10*time.Second - 1)
		c.wantPhase(breaker.Open)
		c.wantReopensIn(1)
		if got := c.view().OpenUntil; !got.Equal(noon.Add(10 * time.Second)) {
			t.Errorf("OpenUntil = %s", got)
		}
		c.wait(1)
		c.wantPhase(breaker.HalfOpen)
		c.wantReopensIn(0)
		if c.st.Phase != breaker.Open {
			t.Errorf("stored phase = %s: half-open is derived, never stored", c.st.Phase)
		}
	})
	t.Run("a half-open circuit is decided under the lock", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.wait(10 * time.Second)
		if _, err := c.st.Decide(c.now); !needsLock(err) {
			t.Errorf("Decide = %v, want a decision under the lock", err)
		}
	})
	t.Run("a closed circuit is decided without the lock", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.run("ff")
		p, err := c.st.Decide(c.now)
		if err != nil || p.Lease != "" || p.Generation != c.st.Generation {
			t.Errorf("Decide = %+v, %v", p, err)
		}
	})
	t.Run("a 429 opens the circuit at once for its OpenFor", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.record(c.mustPermit(""), breaker.Outcome{Failed: true, Reason: "429", OpenFor: 20 * time.Second})
		c.wantPhase(breaker.Open)
		c.wantReopensIn(20 * time.Second)
		if got := c.lastTransition().Reason; got != "asked to wait: 429" {
			t.Errorf("reason = %q", got)
		}
	})
	t.Run("a 429's OpenFor is capped at OpenMax", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.record(c.mustPermit(""), breaker.Outcome{Failed: true, OpenFor: time.Hour})
		c.wantReopensIn(time.Minute)
	})
	t.Run("a neutral 429 does not open the circuit", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.record(c.mustPermit(""), breaker.Outcome{Failed: true, Neutral: true, OpenFor: time.Hour})
		c.wantPhase(breaker.Closed)
	})
	t.Run("OpenFor above OpenMax opens for OpenMax", func(t *testing.T) {
		p := testBreaker()
		p.OpenFor, p.OpenMax = time.Hour, time.Minute // an invalid policy still never opens past OpenMax
		c := newCircuit(t, p)
		c.trip()
		c.wantReopensIn(time.Minute)
	})
}

func TestBreakerProbes(t *testing.T) {
	halfOpen := func(t *testing.T, p breaker.Policy) *circuit {
		c := newCircuit(t, p)
		c.trip()
		c.wait(p.OpenFor)
		c.wantPhase(breaker.HalfOpen)
		return c
	}
	t.Run("exactly Probes callers get a lease; the rest are told another is probing", func(t *testing.T) {
		p := testBreaker()
		p.Probes = 2
		c := halfOpen(t, p)
		p1, p2 := c.mustPermit("one"), c.mustPermit("two")
		if p1.Lease != "one" || p2.Lease != "two" || p1.Generation != c.st.Generation {
			t.Fatalf("permits = %+v, %+v", p1, p2)
		}
		_, err := c.permit("three")
		var oe *breaker.OpenError
		if !errors.As(err, &oe) || !oe.Probing || oe.Phase != breaker.HalfOpen {
			t.Fatalf("third caller got %v, want a probing OpenError", err)
		}
		if want := "circuit api is half-open and another caller is probing it"; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
		if got := c.view().ActiveProbes; got != 2 {
			t.Errorf("ActiveProbes = %d, want 2", got)
		}
	})
	t.Run("a probe killed mid-call frees its slot when its lease ends", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		c.mustPermit("killed") // never records: SIGKILL
		c.wait(5*time.Second - 1)
		if _, err := c.permit("next"); err == nil {
			t.Fatal("a second probe got in while the first lease was held")
		}
		c.wait(1)
		if got := c.view().ActiveProbes; got != 0 {
			t.Errorf("ActiveProbes = %d after the lease ended", got)
		}
		if p := c.mustPermit("next"); p.Lease != "next" {
			t.Errorf("permit = %+v", p)
		}
		if len(c.st.Probes) != 1 {
			t.Errorf("stored leases = %+v, want only the new one", c.st.Probes)
		}
	})
	t.Run("a successful probe closes the circuit", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		c.record(c.mustPermit("probe"), breaker.Outcome{})
		c.wantPhase(breaker.Closed)
		e := c.lastTransition()
		if e.From != breaker.HalfOpen || e.To != breaker.Closed || e.Reason != "probe succeeded" {
			t.Errorf("event = %+v", e)
		}
		if c.st.Probes != nil || c.st.ConsecutiveFailures != 0 || c.st.Reopens != 0 || !c.st.OpenedAt.Wall.IsZero() || c.st.OpenPeriod != 0 {
			t.Errorf("closed state keeps open-circuit fields: %+v", c.st)
		}
	})
	t.Run("each failed probe reopens for the period × OpenMultiplier, up to OpenMax", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		for _, want := range []time.Duration{20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
			c.record(c.mustPermit("probe"), breaker.Outcome{Failed: true, Reason: "refused"})
			c.wantPhase(breaker.Open)
			c.wantReopensIn(want)
			if e := c.lastTransition(); e.From != breaker.HalfOpen || e.Reason != "probe failed: refused" || time.Duration(e.For) != want {
				t.Errorf("event = %+v", e)
			}
			c.wait(want)
		}
	})
	t.Run("a successful probe resets the open period", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		c.record(c.mustPermit("probe"), breaker.Outcome{Failed: true})
		c.wait(20 * time.Second)
		c.record(c.mustPermit("probe"), breaker.Outcome{})
		c.wantPhase(breaker.Closed)
		c.trip()
		c.wantReopensIn(10 * time.Second)
	})
	t.Run("a failed probe with a 429 reopens for its OpenFor", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		c.record(c.mustPermit("probe"), breaker.Outcome{Failed: true, OpenFor: 3 * time.Second})
		c.wantReopensIn(3 * time.Second)
	})
	t.Run("a neutral probe outcome frees the lease and leaves the circuit half-open", func(t *testing.T) {
		c := halfOpen(t, testBreaker())
		gen := c.st.Generation
		c.record(c.mustPermit("probe"), breaker.Outcome{Failed: true, Neutral: true, Reason: "no route to host"})
		c.wantPhase(breaker.HalfOpen)
		if c.view().ActiveProbes != 0 || c.st.Generation != gen || c.st.LastFailure == "no route to host" {
			t.Errorf("after a neutral probe: %+v", c.st)
		}
		c.record(c.mustPermit("cancelled"), breaker.Outcome{Neutral: true})
		c.wantPhase(breaker.HalfOpen)
		if c.view().ActiveProbes != 0 {
			t.Error("a cancelled probe kept its lease")
		}
	})
	t.Run("an ordinary caller's late result does not settle a half-open circuit", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		late := c.mustPermit("")
		c.trip()
		c.wait(10 * time.Second)
		c.record(late, breaker.Outcome{})
		c.wantPhase(breaker.HalfOpen)
	})
}

func TestBreakerGenerations(t *testing.T) {
	t.Run("every transition bumps the generation", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		g0 := c.st.Generation
		c.trip()
		g1 := c.st.Generation
		c.wait(10 * time.Second)
		c.record(c.mustPermit("probe"), breaker.Outcome{})
		if !(g0 < g1 && g1 < c.st.Generation) {
			t.Errorf("generations %d, %d, %d do not increase", g0, g1, c.st.Generation)
		}
	})
	t.Run("results from an older generation are ignored by the breaker but counted in totals", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		var old []breaker.Permit
		for range 3 {
			old = append(old, c.mustPermit(""))
		}
		c.trip()
		c.wait(10 * time.Second)
		c.record(c.mustPermit("probe"), breaker.Outcome{})
		c.wantPhase(breaker.Closed)
		for _, p := range old {
			c.record(p, breaker.Outcome{Failed: true, Reason: "late"})
		}
		c.wantPhase(breaker.Closed)
		if c.st.ConsecutiveFailures != 0 || c.st.LastFailure != "late" {
			t.Errorf("after late failures: %+v", c.st)
		}
	})
	t.Run("a probe from before a trip and reset does not settle the circuit", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.wait(10 * time.Second)
		stale := c.mustPermit("probe")
		c.events = append(c.events, c.st.Reset(c.now, "")...)
		c.trip()
		c.record(stale, breaker.Outcome{})
		c.wantPhase(breaker.Open)
	})
}

func TestBreakerTripAndReset(t *testing.T) {
	t.Run("a trip without a duration holds until reset", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.events = append(c.events, c.st.Trip(c.now, 0, "")...)
		c.wait(1000 * time.Hour)
		c.wantPhase(breaker.ForcedOpen)
		_, err := c.permit("")
		if !errors.Is(err, breaker.ErrOpen) || err.Error() != "circuit api is forced open until reset" {
			t.Errorf("permit error = %v", err)
		}
		if e := c.lastTransition(); e.To != breaker.ForcedOpen || e.Reason != "tripped by hand" || e.For != 0 {
			t.Errorf("event = %+v", e)
		}
	})
	t.Run("a timed trip ends closed, whatever the circuit was before", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.events = append(c.events, c.st.Trip(c.now, 10*time.Minute, "")...)
		c.wait(10*time.Minute - time.Second)
		c.wantPhase(breaker.ForcedOpen)
		c.wantReopensIn(time.Second)
		_, err := c.permit("")
		if err == nil || err.Error() != "circuit api is forced open (closes in 1s)" {
			t.Errorf("permit error = %v", err)
		}
		c.wait(time.Second)
		c.wantPhase(breaker.Closed)
		if _, err := c.st.Decide(c.now); !needsLock(err) {
			t.Errorf("Decide = %v, want a decision under the lock so the end of the trip is recorded", err)
		}
		p := c.mustPermit("")
		if p.Lease != "" || p.Generation != c.st.Generation || c.st.Phase != breaker.Closed {
			t.Errorf("permit %+v, state %+v", p, c.st)
		}
		if e := c.lastTransition(); e.From != breaker.Closed || e.To != breaker.Closed || e.Reason != "forced open period ended" {
			// From is what View said at the time: the trip had already ended.
			t.Errorf("event = %+v", e)
		}
		c.run("ff")
		c.wantPhase(breaker.Closed) // the failures from before the trip are forgotten
	})
	t.Run("a trip voids the leases of running probes", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.trip()
		c.wait(10 * time.Second)
		probe := c.mustPermit("probe")
		c.events = append(c.events, c.st.Trip(c.now, 0, "")...)
		c.record(probe, breaker.Outcome{})
		c.wantPhase(breaker.ForcedOpen)
		if c.st.Probes != nil {
			t.Errorf("leases = %+v", c.st.Probes)
		}
	})
	t.Run("reset closes the circuit and forgets failures but keeps totals", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.run("sfff")
		c.wantPhase(breaker.Open)
		c.events = append(c.events, c.st.Reset(c.now, "")...)
		c.wantPhase(breaker.Closed)
		if e := c.lastTransition(); e.From != breaker.Open || e.To != breaker.Closed || e.Reason != "reset by hand" {
			t.Errorf("event = %+v", e)
		}
		if c.st.LastFailure == "" || c.st.ConsecutiveFailures != 0 {
			t.Errorf("after reset: %+v", c.st)
		}
		c.run("ff")
		c.wantPhase(breaker.Closed)
	})
	t.Run("reset ends a trip", func(t *testing.T) {
		c := newCircuit(t, testBreaker())
		c.events = append(c.events, c.st.Trip(c.now, 0, "")...)
		c.events = append(c.events, c.st.Reset(c.now, "")...)
		c.wantPhase(breaker.Closed)
		c.mustPermit("")
	})
}

func TestTripAndResetRecordWhoDidIt(t *testing.T) {
	var st breaker.State
	st.Name = "weather"
	for _, c := range []struct {
		events []breaker.Event
		want   string
	}{
		{st.Trip(bootA, 0, ""), "tripped by hand"},
		{st.Trip(bootA, time.Hour, "MQTT"), "tripped by MQTT for 1h0m0s"},
		{st.Reset(bootA, "MQTT"), "reset by MQTT"},
		{st.Reset(bootA, ""), "reset by hand"},
	} {
		if got := c.events[len(c.events)-1].Reason; got != c.want {
			t.Errorf("reason %q, want %q", got, c.want)
		}
	}
}
