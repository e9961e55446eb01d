package history_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/history"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/redis"
)

// An endpoint down for 15.5 s behind a breaker whose open periods grow to 8
// s: the closing probe may come seconds after the endpoint is back, but the
// outage's range, from its last failure to that probe, holds the return.
func TestTheReturnLiesBetweenTheLastFailureAndTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fusebox.Policy{
			Retry:   fusebox.RetryPolicy{Attempts: 1, Timeout: time.Second},
			Breaker: breaker.Policy{TripAfter: 3, OpenFor: time.Second, OpenMax: 8 * time.Second},
		}
		store := mem.New()
		c := fusebox.New(store, fusebox.WithPolicy(p))
		down := true
		call := func(context.Context) error {
			if down {
				return errors.New("connection refused")
			}
			return nil
		}
		start := time.Now()
		var up time.Time
		for time.Since(start) < time.Minute {
			if down && time.Since(start) >= 15500*time.Millisecond {
				down, up = false, time.Now()
			}
			c.Do(context.Background(), "api", call)
			time.Sleep(100 * time.Millisecond)
		}
		events, _ := store.AllEvents(context.Background(), time.Time{})
		out, _ := history.Outages(events, nil, time.Now())
		if len(out) != 1 || out[0].Ongoing {
			t.Fatalf("outages = %+v, want one that ended", out)
		}
		o := out[0]
		if !o.Start.Equal(start) || !o.LastFailureAt.Before(up) || o.End.Before(up) {
			t.Errorf("start %s, last failure %s, end %s; want the start at %s and the return at %s between the other two",
				o.Start.Sub(start), o.LastFailureAt.Sub(start), o.End.Sub(start), time.Duration(0), up.Sub(start))
		}
		if real := up.Sub(start); o.DownAtLeast() > real || o.Duration < real {
			t.Errorf("down %s to %s, want a range holding the real %s", o.DownAtLeast(), o.Duration, real)
		}
		if o.End.Sub(up) < time.Second {
			t.Errorf("the closing probe came %s after the return: the case this test is for, a probe seconds late, never happened", o.End.Sub(up))
		}
	})
}

// Runs with one attempt whose failures are refused at once save nothing by
// being skipped, whatever the config's default policy (three attempts, with
// waits) would have said: the runs' own policy rides on their transitions.
func TestSavedIsEstimatedFromThePolicyTheRunsUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := mem.New()
		once := fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1}}
		c := fusebox.New(store, fusebox.WithPolicy(once))
		refused := func(context.Context) error { return errors.New("connection refused") }
		for range 3 {
			c.Do(ctx, "bridge", refused)
		}
		for range 8 {
			if err := c.Do(ctx, "bridge", refused); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("Do on the open circuit: %v, want a skip", err)
			}
		}
		time.Sleep(fusebox.Policy{}.WithDefaults().Breaker.OpenFor)
		c.Do(ctx, "bridge", func(context.Context) error { return nil })
		events, _ := store.AllEvents(ctx, time.Time{})
		out, _ := history.Outages(events, nil, time.Now()) // the config's default: 3 attempts, 2 s backoff
		if len(out) != 1 || out[0].Skips != 8 || out[0].Saved != 0 {
			t.Fatalf("outages = %+v, want 8 skips saving nothing", out)
		}
		// Events written before transitions recorded their policy fall back
		// to the config's: 8 skips × the mean waits of 1 s and 2 s.
		for i := range events {
			events[i].Retry = breaker.RetryRecord{}
		}
		if out, _ := history.Outages(events, nil, time.Now()); len(out) != 1 || out[0].Saved != 24*time.Second {
			t.Fatalf("outages of old events = %+v, want 8 skips saving 24s", out)
		}
	})
}

// Each open period's skips are priced with the policy of the transition that
// began it: the opening's, then each failed probe's.
func TestSkipsOfEachOpenPeriodUseItsOwnPolicy(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	slow := breaker.RetryRecord{Attempts: 2, Timeout: breaker.Duration(10 * time.Second), Backoff: breaker.Duration(2 * time.Second), Jitter: "none"}
	quick := breaker.RetryRecord{Attempts: 1, Timeout: breaker.Duration(4 * time.Second)}
	fail := func(s int) breaker.Event {
		return breaker.Event{Time: at(s), Circuit: "api", Kind: breaker.EventFailure, Reason: "timeout", TimedOut: true}
	}
	events := []breaker.Event{
		fail(0), fail(1), fail(2),
		{Time: at(2), Circuit: "api", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Since: at(0), Skips: 100, Retry: slow},
		fail(40),
		{Time: at(40), Circuit: "api", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Open, Since: at(0), Skips: 103, Retry: quick},
		{Time: at(200), Circuit: "api", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed, Reason: "probe succeeded", Since: at(0), Skips: 108, Retry: slow},
	}
	out, _ := history.Outages(events, nil, at(300))
	// Every failure timed out: 3 skips × (10 s + 2 s + 10 s), then 5 × 4 s.
	if want := 3*22*time.Second + 5*4*time.Second; len(out) != 1 || out[0].Skips != 8 || out[0].Saved != want {
		t.Fatalf("outages = %+v, want 8 skips saving %s", out, want)
	}
	if !out[0].LastFailureAt.Equal(at(40)) || out[0].DownAtLeast() != 40*time.Second {
		t.Errorf("last failure %s, down at least %s; want the failed probe's 06:15:40, 40s", out[0].LastFailureAt, out[0].DownAtLeast())
	}
	// Ongoing, the open period going on is priced with the failed probe's.
	out, _ = history.Outages(events[:len(events)-1], nil, at(300))
	out[0].CountSkipsTo(110)
	if want := 3*22*time.Second + 7*4*time.Second; out[0].Skips != 10 || out[0].Saved != want {
		t.Fatalf("ongoing outage = %+v, want 10 skips saving %s", out[0], want)
	}
}

// A stepped clock: the wall clock goes back an hour in the middle of an
// outage, through each real store. The stores keep the order they appended
// the events in, so the probe that succeeded after the step still ends the
// outage (read by time, the outage would be ongoing for ever), and its time,
// an hour before the events stored before it, is reported and not believed.
func TestAClockSteppedBackDuringAnOutageEndsIt(t *testing.T) {
	stores := map[string]func(t *testing.T) fusebox.Admin{
		"mem": func(*testing.T) fusebox.Admin { return mem.New() },
		"file": func(t *testing.T) fusebox.Admin {
			s, err := file.Open(filepath.Join(t.TempDir(), "state"), file.WithFsync(false))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) fusebox.Admin {
			// Generous timeouts: the machine is shared and slow; the budget
			// is tested in statestore.
			s, err := redis.Open(redistest.Start(t).URL(), redis.WithTimeouts(2*time.Second, 2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := open(t)
			defer store.Close()
			t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
			clk := testenv.NewClock(breaker.Instant{Wall: t0})
			c := fusebox.New(store, fusebox.WithClock(clk), fusebox.WithPolicy(fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1}}))
			refused := func(context.Context) error { return errors.New("connection refused") }
			for range 3 {
				c.Do(ctx, "nas", refused)
				clk.Advance(time.Second)
			}
			clk.Advance(time.Minute)
			c.Do(ctx, "nas", refused) // a failed probe: open again
			clk.Advance(-time.Hour)   // NTP steps the clock back
			clk.Advance(5 * time.Minute)
			ok := func(context.Context) error { return nil }
			if err := c.Do(ctx, "nas", ok); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("the first call after the step: %v, want a skip (the open period restarts from the stepped clock)", err)
			}
			clk.Advance(time.Minute)
			if err := c.Do(ctx, "nas", ok); err != nil {
				t.Fatalf("the probe after the step: %v", err)
			}
			events, err := store.AllEvents(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			now := clk.Now().Wall
			out, ignored := history.Outages(events, nil, now)
			if len(out) != 1 || out[0].Ongoing || out[0].EndedBy != "probe succeeded" {
				t.Fatalf("outages = %+v, want one, ended by the probe", out)
			}
			if o := out[0]; !o.LastFailureAt.Equal(t0.Add(63*time.Second)) || o.End.Before(o.LastFailureAt) {
				t.Errorf("last failure %s, end %s: want the failed probe at 06:16:03, and no end before it", o.LastFailureAt, o.End)
			}
			if len(ignored) != 1 || ignored[0].Event.To != breaker.Closed || !strings.Contains(ignored[0].Why, "before the event stored before it") {
				t.Errorf("ignored = %+v, want the closing, stepped back", ignored)
			}
		})
	}
}

// Times that cannot be true — year 1, 1970, the far future — are not
// believed: no outage lasts 2,562,047 hours or starts before 2000.
func TestTimesBeyondBeliefAreIgnored(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	fail := func(t time.Time) breaker.Event {
		return breaker.Event{Time: t, Circuit: "bridge", Kind: breaker.EventFailure, Reason: "refused"}
	}
	year1 := time.Time{}
	events := []breaker.Event{
		fail(year1), fail(at(0)), fail(time.Unix(0, 0)),
		{Time: year1, Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Since: year1},
		fail(time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)),
		{Time: at(30), Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed, Reason: "probe succeeded"},
	}
	out, ignored := history.Outages(events, nil, at(3600))
	if len(out) != 1 || !out[0].Start.Equal(t0) || !out[0].LastFailureAt.Equal(t0) || out[0].Duration != 30*time.Second {
		t.Fatalf("outages = %+v, want one from 06:15:00, down at least 0s and at most 30s", out)
	}
	var why []string
	for _, ig := range ignored {
		why = append(why, ig.Why)
	}
	if want := "before 2000; before 2000; before 2000; more than 24h0m0s after now"; strings.Join(why, "; ") != want {
		t.Errorf("ignored because %q, want %q", strings.Join(why, "; "), want)
	}
	if !ignored[0].At.Equal(t0) {
		t.Errorf("the year-1 failure at the head of the log is counted at %s, want the first believable time %s", ignored[0].At, t0)
	}
	// A log with no believable time has no outage, and says so.
	if out, ignored := history.Outages(events[:1], nil, at(3600)); len(out) != 0 || len(ignored) != 1 || !ignored[0].At.IsZero() {
		t.Errorf("a log of one year-1 event: outages %+v, ignored %+v", out, ignored)
	}
}
