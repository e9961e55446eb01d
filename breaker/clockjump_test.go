package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// jumpWall moves the wall clock alone, as NTP or a person with date(1) does.
func (c *circuit) jumpWall(d time.Duration) { c.now.Wall = c.now.Wall.Add(d) }

// reboot starts a new boot whose wall clock reads wall, up for upFor.
func (c *circuit) reboot(boot string, wall time.Time, upFor time.Duration) {
	c.now = breaker.Instant{Wall: wall, Boot: boot, BootTime: upFor}
}

// TestBreakerClockJumps opens a 10s circuit at noon, moves the clocks, and
// checks that the circuit is neither held open past its period from now nor
// let through early within a boot; then that the state, once rebased under
// the lock, ignores every later wall-clock jump.
func TestBreakerClockJumps(t *testing.T) {
	tests := []struct {
		name          string
		change        func(c *circuit)
		want          breaker.Phase
		wantReopensIn time.Duration
		wantSettled   bool
	}{
		{"wall clock jumps forward an hour: open for the rest of the period",
			func(c *circuit) { c.wait(3 * time.Second); c.jumpWall(time.Hour) }, breaker.Open, 7 * time.Second, true},
		{"wall clock jumps back an hour: open for the rest of the period, not an hour more",
			func(c *circuit) { c.wait(3 * time.Second); c.jumpWall(-time.Hour) }, breaker.Open, 7 * time.Second, true},
		{"wall clock jumps back an hour: half-open on time",
			func(c *circuit) { c.wait(10 * time.Second); c.jumpWall(-time.Hour) }, breaker.HalfOpen, 0, true},
		{"a time namespace whose boot clock is an hour ahead opened it: the wall clock's 3s count, open for the remaining 7s",
			func(c *circuit) { c.wait(3 * time.Second); c.now.BootTime -= time.Hour }, breaker.Open, 7 * time.Second, false},
		{"both clocks of the opener an hour ahead: open for the period from now, not an hour more",
			func(c *circuit) { c.now.BootTime -= time.Hour; c.jumpWall(-time.Hour) }, breaker.Open, 10 * time.Second, false},
		{"reboot 3s later by the wall clock: open for the remaining 7s",
			func(c *circuit) { c.reboot("boot-b", noon.Add(3*time.Second), 2*time.Second) }, breaker.Open, 7 * time.Second, false},
		{"reboot a minute later by the wall clock: half-open",
			func(c *circuit) { c.reboot("boot-b", noon.Add(time.Minute), 20*time.Second) }, breaker.HalfOpen, 0, false},
		{"reboot with the wall clock at 1970: open for the period from now, not 55 years",
			func(c *circuit) { c.reboot("boot-b", epoch.Add(20*time.Second), 20*time.Second) }, breaker.Open, 10 * time.Second, false},
		{"reboot with the wall clock a day behind: open for the period from now",
			func(c *circuit) { c.reboot("boot-b", noon.Add(-24*time.Hour), 20*time.Second) }, breaker.Open, 10 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCircuit(t, testBreaker())
			c.trip()
			tt.change(c)
			v := c.view()
			if v.Phase != tt.want || v.ReopensIn != tt.wantReopensIn || v.Settled != tt.wantSettled {
				t.Fatalf("View = %+v; want %s, reopens in %s, settled %v", v, tt.want, tt.wantReopensIn, tt.wantSettled)
			}
			if _, err := c.st.Decide(c.now); !tt.wantSettled && !needsLock(err) {
				t.Fatalf("Decide on times from another boot = %v, want a decision under the lock", err)
			}

			// Under the lock the state is rebased onto this boot's clock...
			c.permit("probe")
			if v := c.view(); !v.Settled || v.Phase != tt.want || v.ReopensIn != tt.wantReopensIn {
				t.Fatalf("after Acquire View = %+v: rebasing changed the decision", v)
			}
			if c.st.OpenedAt.Boot != c.now.Boot {
				t.Errorf("OpenedAt = %+v, not rebased onto %s", c.st.OpenedAt, c.now.Boot)
			}
			// ...so later wall-clock jumps, either way, change nothing.
			for _, jump := range []time.Duration{100 * 24 * time.Hour, -200 * 24 * time.Hour} {
				c.jumpWall(jump)
				if v := c.view(); v.Phase != tt.want || v.ReopensIn != tt.wantReopensIn {
					t.Fatalf("after a wall jump of %s View = %+v", jump, v)
				}
			}
			if tt.want == breaker.Open {
				c.wait(tt.wantReopensIn - 1)
				c.wantPhase(breaker.Open)
				c.wait(1)
				c.wantPhase(breaker.HalfOpen)
			}
		})
	}
}

func TestBreakerNeverOpenPastOpenMaxFromNow(t *testing.T) {
	c := newCircuit(t, testBreaker())
	c.trip()
	for range 5 { // reopen until the period reaches OpenMax
		c.wait(time.Duration(c.st.OpenPeriod))
		c.record(c.mustPermit("probe"), breaker.Outcome{Failed: true})
	}
	c.wantReopensIn(time.Minute)
	c.reboot("boot-b", epoch, 0)
	if v := c.view(); v.ReopensIn > c.policy.OpenMax {
		t.Fatalf("after a reboot into 1970 ReopensIn = %s, above OpenMax %s", v.ReopensIn, c.policy.OpenMax)
	}
}

func TestBreakerLeasesAcrossReboots(t *testing.T) {
	halfOpenWithDeadProbe := func(t *testing.T) *circuit {
		p := testBreaker()
		p.ProbeLease = 30 * time.Second // longer than the 10s open period
		c := newCircuit(t, p)
		c.trip()
		c.wait(10 * time.Second)
		c.mustPermit("died-in-reboot")
		return c
	}
	t.Run("a probe that died in a reboot frees its slot once its lease has passed by the wall clock", func(t *testing.T) {
		c := halfOpenWithDeadProbe(t)
		c.reboot("boot-b", c.now.Wall.Add(time.Minute), 30*time.Second)
		if p := c.mustPermit("after-reboot"); p.Lease != "after-reboot" {
			t.Errorf("permit = %+v", p)
		}
	})
	t.Run("with the wall clock at 1970 a dead probe's lease lasts at most its length from now", func(t *testing.T) {
		c := halfOpenWithDeadProbe(t)
		c.reboot("boot-b", epoch, 30*time.Second)
		// Nothing says how long ago the circuit opened or the probe began,
		// so both start again from now: open for 10s, leased for 30s.
		c.wantReopensIn(10 * time.Second)
		c.permit("too-soon") // rebases under the lock
		c.wait(10 * time.Second)
		c.wantPhase(breaker.HalfOpen)
		if _, err := c.permit("too-soon"); err == nil {
			t.Fatal("a second probe got in while the old lease is held")
		}
		c.jumpWall(30 * 365 * 24 * time.Hour) // NTP fixes the clock: no effect within the boot
		if _, err := c.permit("too-soon"); err == nil {
			t.Fatal("a wall-clock jump freed the lease")
		}
		c.wait(20*time.Second - 1)
		if _, err := c.permit("too-soon"); err == nil {
			t.Fatal("the old lease ended early")
		}
		c.wait(1)
		c.mustPermit("after-lease")
	})
}

// TestBreakerWallOnlyClock: a clock that knows only the wall time (no boot
// ID) cannot tell a jump from elapsed time. Backwards jumps are still caught.
func TestBreakerWallOnlyClock(t *testing.T) {
	start := func(t *testing.T) *circuit {
		c := newCircuit(t, testBreaker())
		c.now = breaker.Instant{Wall: noon}
		c.trip()
		return c
	}
	t.Run("elapsed time is measured on the wall clock", func(t *testing.T) {
		c := start(t)
		c.wait(4 * time.Second)
		c.wantReopensIn(6 * time.Second)
		if !c.view().Settled {
			t.Error("wall-only instants from the same clock are not settled")
		}
	})
	t.Run("the wall clock going back a day holds the circuit open for at most the period from now", func(t *testing.T) {
		c := start(t)
		c.wait(4 * time.Second)
		c.jumpWall(-24 * time.Hour)
		if v := c.view(); v.Settled || v.ReopensIn != 10*time.Second {
			t.Fatalf("View = %+v, want unsettled and open for 10s", v)
		}
		c.permit("")
		c.wait(10*time.Second - 1)
		c.wantPhase(breaker.Open)
		c.wait(1)
		c.wantPhase(breaker.HalfOpen)
	})
	t.Run("the wall clock jumping forward ends the period early: nothing tells it from time passing", func(t *testing.T) {
		c := start(t)
		c.jumpWall(time.Hour)
		c.wantPhase(breaker.HalfOpen)
	})
	t.Run("a boot-aware process reading a wall-only state measures on the wall clock", func(t *testing.T) {
		c := start(t)
		c.now = breaker.Instant{Wall: noon.Add(3 * time.Second), Boot: "boot-a", BootTime: time.Hour}
		if v := c.view(); v.Settled || v.ReopensIn != 7*time.Second {
			t.Fatalf("View = %+v, want unsettled and open for 7s", v)
		}
		c.permit("")
		c.jumpWall(time.Hour)
		c.wantReopensIn(7 * time.Second)
	})
}
