package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// judge follows a circuit through an outage, saying at each moment what a
// call would do and why.
func TestJudgeSaysWhatACallWouldDo(t *testing.T) {
	p := breaker.Policy{TripAfter: 3, OpenFor: 10 * time.Second, OpenMultiplier: 2, OpenMax: time.Minute,
		Probes: 1, ProbeLease: 5 * time.Second}
	now := breaker.Instant{Wall: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Boot: "boot-a", BootTime: 3 * time.Hour}
	st := breaker.State{Name: "api"}
	check := func(what, action string, until time.Time, why ...string) {
		t.Helper()
		v := judge(st, p, now)
		if v.action != action || !v.until.Equal(until) {
			t.Errorf("%s: %s until %v (%q); want %s until %v", what, v.action, v.until, v.why, action, until)
		}
		for _, w := range why {
			if !strings.Contains(v.why, w) {
				t.Errorf("%s: %q does not say %q", what, v.why, w)
			}
		}
	}
	permit := func(lease string) breaker.Permit {
		t.Helper()
		permit, _, err := st.Acquire(p, now, lease, false)
		if err != nil {
			t.Fatalf("no permit: %v", err)
		}
		return permit
	}
	run := func(outcomes string) {
		for i, r := range outcomes {
			st.Record(p, now, permit(""), breaker.Outcome{Attempt: i + 1, Reason: "boom", Failed: r == 'f'})
		}
	}
	check("a new circuit", actionRun, time.Time{}, "closed")
	run("f")
	check("one failure", actionRun, time.Time{}, "closed: 1 of the 3 consecutive failures that open it", "last: boom")
	run("ff")
	opened := now.Wall
	check("opened", actionSkip, opened.Add(10*time.Second), "opened at", "by 3 consecutive failures", "last: boom")

	now = testenv.After(now, 11*time.Second)
	check("its open period over", actionProbe, time.Time{}, "half-open", "this call would be the probe")
	probe := permit("probe-1") // another caller takes the probe
	check("the probe taken", actionSkip, now.Wall.Add(5*time.Second), "another caller holds the probe")
	st.Record(p, now, probe, breaker.Outcome{Attempt: 1, Failed: true, Reason: "still down"})
	check("a failed probe", actionSkip, now.Wall.Add(20*time.Second), "last: still down", "1 failed probe(s) since")

	now = testenv.After(now, 21*time.Second)
	st.Record(p, now, permit("probe-2"), breaker.Outcome{Attempt: 1})
	check("a probe that succeeded", actionRun, time.Time{}, "closed")

	st.Trip(now, 0, "")
	check("tripped until reset", actionSkip, time.Time{}, "tripped for maintenance", "until reset")
	st.Trip(now, time.Minute, "")
	check("tripped for a minute", actionSkip, now.Wall.Add(time.Minute), "tripped for maintenance")
	now = testenv.After(now, 2*time.Minute)
	check("the trip over", actionRun, time.Time{}, "the trip for maintenance has ended")

	// A state another writer stored with an open period of a century is
	// probed once open_max has passed, and judge says so.
	century := 876000 * time.Hour
	st = breaker.State{Name: "api", Phase: breaker.Open, Generation: 4, OpenedAt: now,
		OpenPeriod: breaker.Duration(century), OpenUntil: now.Wall.Add(century)}
	opened = now.Wall
	now = testenv.After(now, time.Second)
	check("opened for a century", actionSkip, opened.Add(time.Minute), "opened at")
}
