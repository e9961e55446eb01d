package breaker_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// FuzzStateJSON decodes arbitrary bytes as a stored State, as a store does
// with a state file a crash or a person left behind, then drives the breaker
// from it at several moments (same boot, another boot, a wall clock far
// ahead or behind). Whatever was decoded, nothing panics, the state encodes
// back to what decodes to itself, and the breaker keeps its promises: a
// reset closes, a trip opens, a successful probe closes, a lease is granted
// only while fewer than Probes are held, an opening lasts no longer than
// open_max, and no circuit stays open longer than its own open period from
// now.
func FuzzStateJSON(f *testing.F) {
	seeds := []string{
		`{}`, `{"name":"z2m","state":"closed"}`, `null`, `[]`, `{"state":5}`, `{"state":"bogus","open_period":"1h"}`,
		`{"name":"z2m","state":"open","generation":3,"consecutive_failures":3,"opened_at":{"wall":"2030-01-02T03:04:05Z","boot":"b1","boottime_ns":5000000000},"open_period":"30s","open_until":"2030-01-02T03:04:35Z","total_failures":3,"total_successes":0}`,
		`{"state":"open","opened_at":{"wall":"2030-01-02T03:04:05Z"},"open_period":"30s","reopens":4,"probes":[{"id":"a","granted":{"wall":"2030-01-02T03:04:40Z","boot":"b1","boottime_ns":40000000000},"for":"12s"},{"id":"b","granted":{"wall":"2040-01-02T03:04:40Z"},"for":-5}]}`,
		`{"state":"forced_open","opened_at":{"wall":"2030-01-02T03:04:05Z"},"open_period":"10m"}`,
		`{"state":"forced_open"}`,
		`{"state":"open","open_period":"-1h","reopens":-9223372036854775808,"generation":18446744073709551615}`,
		`{"state":"open","open_period":9223372036854775807,"opened_at":{"wall":"0001-01-01T00:00:00Z","boottime_ns":-9223372036854775808}}`,
		`{"state":"closed","recent":"ffffffffffffffffffffffffffffffffffffffff","consecutive_failures":-3}`,
		`{"state":"closed","opened_at":{"wall":"9999-12-31T23:59:59.999999999+23:59"}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var st breaker.State
		if json.Unmarshal(data, &st) != nil {
			return
		}
		b1, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("a decoded state does not encode: %v", err)
		}
		var again breaker.State
		if err := json.Unmarshal(b1, &again); err != nil {
			t.Fatalf("%s does not decode: %v", b1, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
		base := st.OpenedAt.Wall
		if base.IsZero() {
			base = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		}
		for _, now := range []breaker.Instant{
			{Wall: base.Add(time.Second), Boot: st.OpenedAt.Boot, BootTime: st.OpenedAt.BootTime + time.Second},
			{Wall: base.Add(time.Hour), Boot: "another-boot", BootTime: time.Minute},
			{Wall: base.Add(-48 * time.Hour)},
			{Wall: base.Add(10 * 365 * 24 * time.Hour)},
		} {
			for _, p := range policies {
				drive(t, st, p, now)
			}
		}
	})
}

var policies = []breaker.Policy{
	fusebox.Policy{}.WithDefaults().Breaker,
	{TripAfter: 1, OpenFor: time.Second, OpenMultiplier: 3, OpenMax: 10 * time.Second, Probes: 2, ProbeLease: 5 * time.Second},
	{OpenFor: time.Minute, OpenMultiplier: 2, OpenMax: time.Hour, Probes: 1, ProbeLease: time.Minute,
		FailureRate: &breaker.FailureRate{Threshold: 0.5, Window: 4, MinAttempts: 2}},
}

func drive(t *testing.T, st breaker.State, p breaker.Policy, now breaker.Instant) {
	t.Helper()
	clone := func() breaker.State {
		c := st
		c.Probes = append([]breaker.Lease(nil), st.Probes...)
		return c
	}
	if v := st.View(now); v.ReopensIn > max(time.Duration(st.OpenPeriod), 0) {
		t.Fatalf("View at %v: open for %s more, longer than its own period %s", now, v.ReopensIn, time.Duration(st.OpenPeriod))
	}
	st.Decide(now)

	s := clone()
	s.Reset(now, "")
	if v := s.View(now); v.Phase != breaker.Closed {
		t.Fatalf("after Reset: %s", v.Phase)
	}
	if _, err := s.Decide(now); err != nil {
		t.Fatalf("after Reset, Decide = %v", err)
	}

	s = clone()
	s.Trip(now, 0, "")
	if _, err := s.Decide(now); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("after Trip, Decide = %v, want ErrOpen", err)
	}

	for _, failed := range []bool{false, true} {
		s = clone()
		held := liveLeases(&s, now)
		permit, _, err := s.Acquire(p, now, "fuzz-lease", false)
		if permit.Lease != "" && held >= max(p.Probes, 1) {
			t.Fatalf("a lease granted while %d were held (probes %d)", held, p.Probes)
		}
		if err != nil {
			continue
		}
		gen := s.Generation
		s.Record(p, testenv.After(now, time.Millisecond), permit, breaker.Outcome{Failed: failed, Attempt: 1, Reason: "fuzz"})
		switch {
		case permit.Lease != "" && !failed && s.Phase != breaker.Closed:
			t.Fatalf("a successful probe left the circuit %s", s.Phase)
		case s.Generation != gen && s.Phase == breaker.Open && time.Duration(s.OpenPeriod) > p.OpenMax:
			t.Fatalf("opened for %s, more than open_max %s", time.Duration(s.OpenPeriod), p.OpenMax)
		}
		for _, l := range s.Probes {
			if l.ID == "fuzz-lease" {
				t.Fatal("the lease outlived its probe's outcome")
			}
		}
	}
}

func liveLeases(s *breaker.State, now breaker.Instant) int {
	n := 0
	for _, l := range s.Probes {
		if d, _ := now.Since(l.Granted); d < time.Duration(l.For) {
			n++
		}
	}
	return n
}
