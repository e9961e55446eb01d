package breaker_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// drawInstant draws an instant on any clock: wall-only, or with a boot ID
// (often the caller's own) and a boot-clock reading anywhere from far behind
// to far ahead of the caller's. Wall times range over a century either side,
// as a board without an RTC, a hand-set clock or a time namespace gives them.
func drawInstant(t *rapid.T, label string, near breaker.Instant) breaker.Instant {
	const century = 100 * 365 * 24 * time.Hour
	offset := func(name string) time.Duration {
		return rapid.SampledFrom([]time.Duration{
			0, time.Second, -time.Second, time.Hour, -time.Hour, century, -century,
			time.Duration(rapid.Int64Range(-int64(century), int64(century)).Draw(t, label+"_"+name+"_any")),
		}).Draw(t, label+"_"+name)
	}
	i := breaker.Instant{Wall: near.Wall.Add(offset("wall"))}
	if boot := rapid.SampledFrom([]string{"", near.Boot, "boot-other"}).Draw(t, label+"_boot"); boot != "" {
		i.Boot, i.BootTime = boot, near.BootTime+offset("boottime")
	}
	return i
}

// longest records, across every run, the longest real time after the first
// look at which an open period or a lease still refused a call, as a
// fraction of its configured length (below 1 when the bound holds).
var longest struct {
	sync.Mutex
	open, lease float64
}

func noteLongest(p *float64, refusedAt, length time.Duration) {
	longest.Lock()
	defer longest.Unlock()
	*p = max(*p, float64(refusedAt)/float64(length))
}

// TestSuspectInstantsNeverWedge stores a circuit's instants on one arbitrary
// clock, then reads them from another, stepping real time forward with the
// caller doing what Do does at each step (Decide, and under the lock Acquire,
// whose changes are kept). Whatever the pair of clocks, the open period and
// the lease end within their configured length of real time from the first
// look: an instant in the future of the clock reading it never holds a
// circuit open or a probe slot taken until that clock catches up.
func TestSuspectInstantsNeverWedge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := breaker.Instant{Wall: noon, BootTime: 3 * time.Hour}
		if rapid.Bool().Draw(t, "caller_knows_boot") {
			now.Boot = "boot-a"
		}
		at := drawInstant(t, "stored", breaker.Instant{Wall: noon, Boot: "boot-a", BootTime: 3 * time.Hour})
		p := testBreaker()
		p.Probes = 1
		p.ProbeLease = time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "lease"))
		st := breaker.State{Name: "api", Generation: 1}
		var length time.Duration
		leased := rapid.Bool().Draw(t, "leased")
		switch {
		case leased: // half-open, a probe's lease taken at the suspect instant
			st.Phase, st.OpenedAt, st.OpenPeriod = breaker.Open, testenv.After(now, -time.Hour), breaker.Duration(time.Second)
			st.Probes = []breaker.Lease{{ID: "stuck", Granted: at, For: breaker.Duration(p.ProbeLease)}}
			length = p.ProbeLease
		case rapid.Bool().Draw(t, "timed_trip"):
			length = time.Duration(rapid.Int64Range(1, int64(720*time.Hour)).Draw(t, "trip_for"))
			st.Phase, st.OpenedAt, st.OpenPeriod = breaker.ForcedOpen, at, breaker.Duration(length)
		default:
			length = time.Duration(rapid.Int64Range(1, int64(p.OpenMax)).Draw(t, "open_period"))
			st.Phase, st.OpenedAt, st.OpenPeriod = breaker.Open, at, breaker.Duration(length)
		}

		var elapsed, refusedAt time.Duration
		for step := 0; ; step++ {
			v := st.View(now)
			if v.ReopensIn > max(length-elapsed, 0) && !leased {
				t.Fatalf("after %s of %s, View says open for %s more: %+v", elapsed, length, v.ReopensIn, v)
			}
			_, err := st.Decide(now)
			var permit breaker.Permit
			if needsLock(err) {
				permit, _, err = st.Acquire(p, now, fmt.Sprint("probe-", step), false)
			}
			ended := err == nil && (!leased || permit.Lease != "")
			if ended {
				if leased {
					noteLongest(&longest.lease, refusedAt, length)
				} else {
					noteLongest(&longest.open, refusedAt, length)
				}
				return
			}
			if elapsed >= length {
				t.Fatalf("still refused %s after the first look, past its length %s: %v; state %+v", elapsed, length, err, st)
			}
			refusedAt = elapsed
			// Steps that land just before or on the end, or anywhere up to it.
			d := rapid.SampledFrom([]time.Duration{
				1, length - elapsed - 1, length - elapsed,
				time.Duration(rapid.Int64Range(1, int64(length)).Draw(t, "any_step")),
			}).Draw(t, "step")
			d = max(d, 1)
			now, elapsed = testenv.After(now, d), elapsed+d
		}
	})
	t.Logf("longest open period: %.9f of its length; longest lease: %.9f of its length", longest.open, longest.lease)
}
