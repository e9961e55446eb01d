package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/history"
	"github.com/fusebox-hq/fusebox/mem"
)

// testPolicy: one attempt a call, three failures open the circuit for a
// minute, doubling per failed probe.
var testPolicy = fusebox.Policy{
	Retry:   fusebox.RetryPolicy{Attempts: 1, Timeout: 5 * time.Second},
	Breaker: breaker.Policy{TripAfter: 3, OpenFor: time.Minute, OpenMax: 10 * time.Minute},
}

// upstream is an endpoint that is down while down is set, failing with
// reason.
type upstream struct {
	down   bool
	reason error
}

func (u *upstream) call(context.Context) error {
	if u.down {
		return u.reason
	}
	return nil
}

// sim calls the circuits every tick, as a cron job would, inside a synctest
// bubble whose clock starts at 2000-01-01 00:00 UTC (a Saturday).
type sim struct {
	t     *testing.T
	store *mem.Store
	c     *fusebox.Circuits
	ups   map[string]*upstream
}

func newSim(t *testing.T) *sim {
	s := &sim{t: t, store: mem.New(), ups: map[string]*upstream{}}
	s.c = fusebox.New(s.store, fusebox.WithPolicy(testPolicy))
	return s
}

func (s *sim) upstream(name string) *upstream {
	if s.ups[name] == nil {
		s.ups[name] = &upstream{reason: errors.New("connection refused")}
	}
	return s.ups[name]
}

// run calls every upstream once per tick for d.
func (s *sim) run(d, tick time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		for name, u := range s.ups {
			s.c.Do(context.Background(), name, u.call)
		}
		time.Sleep(tick)
	}
}

func (s *sim) outages() []history.Outage {
	s.t.Helper()
	events, err := s.store.AllEvents(context.Background(), time.Time{})
	if err != nil {
		s.t.Fatal(err)
	}
	out, ignored := history.Outages(events, func(string) fusebox.Policy { return testPolicy }, time.Now())
	if len(ignored) > 0 {
		s.t.Errorf("times ignored in a simulation on a steady clock: %+v", ignored)
	}
	for i := range out {
		c, _ := s.store.Counts(context.Background(), out[i].Circuit)
		out[i].CountSkipsTo(c.Skips)
	}
	return out
}

func TestOutageRunsFromFirstFailureToFirstSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t)
		bridge := s.upstream("bridge")
		s.run(10*time.Minute, 10*time.Second)
		down := time.Now()
		bridge.down = true
		s.run(5*time.Minute, 10*time.Second)
		up := time.Now()
		bridge.down = false
		s.run(10*time.Minute, 10*time.Second)

		out := s.outages()
		if len(out) != 1 {
			t.Fatalf("outages = %+v, want 1", out)
		}
		o := out[0]
		// The first failing call is the first tick after down; the first
		// success is the first probe after up, within an open period (at
		// most 4m after a one-minute period doubled twice) plus a tick.
		if !o.Start.Equal(down) {
			t.Errorf("start = %s, want %s (the first failure)", o.Start, down)
		}
		if o.Ongoing || o.End.Before(up) || o.End.After(up.Add(4*time.Minute+10*time.Second)) {
			t.Errorf("end = %s (ongoing %v), want the first probe after %s", o.End, o.Ongoing, up)
		}
		if o.Duration != o.End.Sub(o.Start) {
			t.Errorf("duration = %s, want end-start %s", o.Duration, o.End.Sub(o.Start))
		}
		if want := o.Opened.Sub(o.Start); want != 20*time.Second {
			t.Errorf("opened %s after the first failure, want 20s (three ticks)", want)
		}
		// 3 failures to open, then one per failed probe.
		if o.Failures != 3+o.FailedProbes || len(o.Reasons) != 1 || o.Reasons[0] != (history.ReasonCount{Reason: "connection refused", Count: o.Failures}) {
			t.Errorf("failures %d, failed probes %d, reasons %+v", o.Failures, o.FailedProbes, o.Reasons)
		}
		// Every tick between the opening and the closing that was not a
		// probe was skipped.
		ticks := uint64(o.End.Sub(o.Opened) / (10 * time.Second))
		if want := ticks - uint64(o.FailedProbes) - 1; o.Skips != want {
			t.Errorf("skips = %d, want %d", o.Skips, want)
		}
		if o.Saved != 0 {
			t.Errorf("saved = %s, want 0: refused connections cost no time and one attempt has no wait", o.Saved)
		}
	})
}

func TestOngoingOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t)
		api := s.upstream("api")
		api.down, api.reason = true, &fusebox.Failure{Err: errors.New("slow"), Reason: "timeout after 5s: slow"}
		s.run(3*time.Minute, 10*time.Second)
		out := s.outages()
		if len(out) != 1 || !out[0].Ongoing || !out[0].End.IsZero() {
			t.Fatalf("outages = %+v, want one ongoing", out)
		}
		o := out[0]
		if o.Duration != time.Now().Sub(o.Start) {
			t.Errorf("duration = %s, want now-start", o.Duration)
		}
		if o.Skips == 0 {
			t.Error("an ongoing outage counts no skips")
		}
	})
}

func TestOutagesNewestFirstAcrossCircuits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t)
		a, b := s.upstream("a"), s.upstream("b")
		a.down = true
		s.run(2*time.Minute, 10*time.Second)
		a.down = false
		s.run(5*time.Minute, 10*time.Second)
		b.down = true
		s.run(2*time.Minute, 10*time.Second)
		b.down = false
		s.run(5*time.Minute, 10*time.Second)
		a.down = true
		s.run(2*time.Minute, 10*time.Second)
		var got []string
		for _, o := range s.outages() {
			got = append(got, o.Circuit+map[bool]string{true: "(ongoing)", false: ""}[o.Ongoing])
		}
		if strings.Join(got, " ") != "a(ongoing) b a" {
			t.Errorf("outages = %v, want a(ongoing) b a", got)
		}
	})
}

func TestTripByHandIsNoOutageButResetEndsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := newSim(t)
		s.c.Trip(ctx, "nas", time.Hour, "")
		s.c.Reset(ctx, "nas", "")
		api := s.upstream("api")
		api.down = true
		s.run(time.Minute, 10*time.Second)
		s.c.Reset(ctx, "api", "")
		out := s.outages()
		if len(out) != 1 || out[0].Circuit != "api" || out[0].EndedBy != "reset by hand" {
			t.Fatalf("outages = %+v, want api's, ended by a reset", out)
		}
	})
}

func TestOutagesReadEventsWithoutTheMarks(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	fail := func(s int) breaker.Event {
		return breaker.Event{Time: at(s), Circuit: "old", Kind: breaker.EventFailure, Reason: "refused"}
	}
	// Events of a release before openings carried Since and Skips: the
	// start is the earliest of the TripAfter failures before the opening.
	events := []breaker.Event{
		fail(-3600), fail(0), fail(10), fail(20),
		{Time: at(20), Circuit: "old", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open},
		{Time: at(100), Circuit: "old", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed, Reason: "probe succeeded"},
	}
	out, _ := history.Outages(events, nil, at(200))
	if len(out) != 1 || !out[0].Start.Equal(t0) || out[0].Duration != 100*time.Second || out[0].Failures != 3 {
		t.Fatalf("outages = %+v, want one from 06:15:00 lasting 100s with 3 failures", out)
	}
}

func TestSkipCost(t *testing.T) {
	p := fusebox.Policy{Retry: fusebox.RetryPolicy{
		Attempts: 3, Timeout: 10 * time.Second, Deadline: time.Minute,
		Backoff: fusebox.Backoff{First: 2 * time.Second, Multiplier: 2, Jitter: fusebox.JitterNone},
	}}
	tests := []struct {
		name     string
		p        fusebox.Policy
		timedOut float64
		want     time.Duration
	}{
		{"refused at once: only the waits", p, 0, 2*time.Second + 4*time.Second},
		{"every attempt timed out", p, 1, 3*10*time.Second + 6*time.Second},
		{"half of them timed out", p, 0.5, 3*5*time.Second + 6*time.Second},
		{"capped by the deadline", fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 10, Timeout: 10 * time.Second, Deadline: 25 * time.Second}}, 1, 25 * time.Second},
		{"full jitter waits half the backoff on average", fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 2, Backoff: fusebox.Backoff{First: 4 * time.Second}}}, 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := history.SkipCost(tt.p, tt.timedOut); got != tt.want {
				t.Errorf("SkipCost = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestSavedTimeFromTimeouts(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	slow := func(s int) breaker.Event {
		return breaker.Event{Time: t0.Add(time.Duration(s) * time.Second), Circuit: "api", Kind: breaker.EventFailure, Reason: "timeout after 5s", TimedOut: true}
	}
	events := []breaker.Event{
		slow(0), slow(5), slow(10),
		{Time: t0.Add(10 * time.Second), Circuit: "api", Kind: breaker.EventTransition, To: breaker.Open, Since: t0, Skips: 7},
		{Time: t0.Add(70 * time.Second), Circuit: "api", Kind: breaker.EventTransition, To: breaker.Closed, Reason: "probe succeeded", Skips: 19},
	}
	out, _ := history.Outages(events, func(string) fusebox.Policy { return testPolicy }, t0.Add(time.Hour))
	if len(out) != 1 || out[0].Skips != 12 || out[0].Saved != 12*5*time.Second {
		t.Fatalf("outages = %+v, want 12 skips saving 12 timeouts of 5s", out)
	}
}

func TestTableAndJSON(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	o := history.Outage{Circuit: "bridge", Start: t0, Opened: t0.Add(20 * time.Second), LastFailureAt: t0.Add(14*time.Minute + 30*time.Second), End: t0.Add(15 * time.Minute),
		EndedBy: "probe succeeded", Duration: 15 * time.Minute, Failures: 5, Skips: 40, Saved: 2 * time.Minute,
		Reasons: []history.ReasonCount{{"connection refused", 4}, {"status 502", 1}}}
	var b bytes.Buffer
	if err := history.WriteTable(&b, []history.Outage{o, {Circuit: "api", Start: t0, LastFailureAt: t0.Add(50 * time.Minute), Ongoing: true, Duration: time.Hour}}, time.UTC); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2026-03-01 06:15:00  06:29:30–06:30:00  14m30s–15m0s", // back between the last failure and the closing probe
		"4× connection refused; 1× status 502",
		"ongoing            50m0s–1h0m0s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	j, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"duration_seconds":900`, `"saved_seconds":120`, `"skips":40`, `"end":"2026-03-01T06:30:00Z"`, `"last_failure_at":"2026-03-01T06:29:30Z"`, `"ongoing":false`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s: %s", want, j)
		}
	}
}
