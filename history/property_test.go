package history_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/history"
	"github.com/fusebox-hq/fusebox/internal/eventorder"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Any history the state machine can write reads as outages that begin at
// the first failure before an opening of a closed circuit, end at the next
// closing, never overlap, and count every failure between.
func TestOutagesOfAnyHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := testPolicy.WithDefaults()
		st := breaker.State{Name: "api"}
		now := breaker.Instant{Wall: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
		var events []breaker.Event
		openings, failures := 0, 0
		steps := rapid.IntRange(0, 200).Draw(t, "steps")
		for i := range steps {
			now = testenv.After(now, time.Duration(rapid.IntRange(1, 120).Draw(t, "wait"))*time.Second)
			var ev []breaker.Event
			switch action := rapid.SampledFrom([]string{"fail", "fail", "succeed", "trip", "reset"}).Draw(t, "action"); action {
			case "trip":
				ev = st.Trip(now, time.Duration(rapid.IntRange(0, 300).Draw(t, "trip"))*time.Second, "")
			case "reset":
				ev = st.Reset(now, "")
			default:
				permit, acq, err := st.Acquire(p.Breaker, now, fmt.Sprint(i), false)
				ev = acq
				if err == nil {
					ev = append(ev, st.Record(p.Breaker, now, permit, breaker.Outcome{Failed: action == "fail", Attempt: 1, Reason: "boom"})...)
				}
			}
			for _, e := range ev {
				if e.Kind == breaker.EventTransition && e.To == breaker.Open && e.From == breaker.Closed {
					openings++
				}
			}
			events = append(events, ev...)
		}
		outages, ignored := history.Outages(events, func(string) fusebox.Policy { return testPolicy }, now.Wall)
		if len(ignored) > 0 {
			t.Fatalf("times of a steady clock ignored: %+v", ignored)
		}
		if len(outages) != openings {
			t.Fatalf("%d outages, %d openings of a closed circuit", len(outages), openings)
		}
		checkOrder(t, outages, now.Wall)
		for i, o := range outages {
			failures += o.Failures
			if o.Failures < 1 {
				t.Fatalf("outage %d counts no failure: %+v", i, o)
			}
		}
		counted := 0
		for _, e := range events {
			if e.Kind == breaker.EventFailure {
				counted++
			}
		}
		if failures > counted {
			t.Fatalf("outages count %d failures, %d were logged", failures, counted)
		}
	})
}

// checkOrder checks the ordering invariants of Outages' answer: within an
// outage, Start ≤ Opened ≤ LastFailureAt ≤ End, with both durations those
// times give; every time believable at now; newest first; and a circuit's
// outages apart from one another, only its newest ongoing.
func checkOrder(t *rapid.T, outages []history.Outage, now time.Time) {
	latest := now.Add(history.FarFuture)
	newer := map[string]history.Outage{} // each circuit's outage seen last, so the next newer
	for i, o := range outages {
		switch {
		case o.Start.After(o.Opened) || o.Opened.After(o.LastFailureAt):
			t.Fatalf("outage %d: start %s, opened %s, last failure %s out of order", i, o.Start, o.Opened, o.LastFailureAt)
		case !o.Ongoing && o.LastFailureAt.After(o.End):
			t.Fatalf("outage %d: last failure %s after its end %s", i, o.LastFailureAt, o.End)
		case o.Ongoing && !o.End.IsZero():
			t.Fatalf("outage %d is ongoing with an end %s", i, o.End)
		case o.Start.Before(history.Epoch) || o.LastFailureAt.After(latest) || o.End.After(latest):
			t.Fatalf("outage %d: times beyond belief: %+v", i, o)
		case !o.Ongoing && o.Duration != o.End.Sub(o.Start):
			t.Fatalf("outage %d: duration %s, end-start %s", i, o.Duration, o.End.Sub(o.Start))
		case o.Ongoing && o.Duration != max(now.Sub(o.Start), o.DownAtLeast()):
			t.Fatalf("outage %d: ongoing for %s, now-start %s", i, o.Duration, now.Sub(o.Start))
		case o.DownAtLeast() < 0 || o.DownAtLeast() > o.Duration:
			t.Fatalf("outage %d: down at least %s, at most %s", i, o.DownAtLeast(), o.Duration)
		case o.Saved < 0:
			t.Fatalf("outage %d saved %s", i, o.Saved)
		case i > 0 && o.Start.After(outages[i-1].Start):
			t.Fatalf("outage %d starts %s, after the newer %d's %s", i, o.Start, i-1, outages[i-1].Start)
		}
		if n, ok := newer[o.Circuit]; ok {
			if o.Ongoing {
				t.Fatalf("outage %d of %s is ongoing, and a newer one exists: %+v", i, o.Circuit, n)
			}
			if o.End.After(n.Start) {
				t.Fatalf("outage %d of %s ends %s after its next starts %s", i, o.Circuit, o.End, n.Start)
			}
		}
		newer[o.Circuit] = o
	}
}

// drawEvents draws any event sequence of a few circuits: kinds, phases,
// marks and policies at random, with times that walk forward, step back a
// little or a lot, or jump to year 1, 1970 or the far future.
func drawEvents(t *rapid.T, now time.Time) []breaker.Event {
	phases := []breaker.Phase{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen, ""}
	kinds := []breaker.EventKind{breaker.EventFailure, breaker.EventFailure, breaker.EventNeutralFailure, breaker.EventTransition, breaker.EventTransition, breaker.EventSuccess}
	clock := now.Add(-time.Duration(rapid.IntRange(0, 1000).Draw(t, "start")) * time.Minute)
	n := rapid.IntRange(0, 120).Draw(t, "events")
	events := make([]breaker.Event, n)
	var skips uint64
	for i := range events {
		switch rapid.IntRange(0, 9).Draw(t, "step") {
		case 0:
			clock = clock.Add(-time.Duration(rapid.IntRange(1, 7200).Draw(t, "back")) * time.Second)
		case 1:
			clock = clock.Add(time.Duration(rapid.Int64Range(-int64(time.Minute), int64(time.Minute)).Draw(t, "skew")))
		default:
			clock = clock.Add(time.Duration(rapid.IntRange(0, 600).Draw(t, "forward")) * time.Second)
		}
		at := clock
		switch rapid.IntRange(0, 19).Draw(t, "odd") {
		case 0:
			at = time.Time{}.Add(time.Duration(rapid.IntRange(0, 1000).Draw(t, "year1")) * time.Second)
		case 1:
			at = time.Unix(int64(rapid.IntRange(0, 1000).Draw(t, "1970")), 0)
		case 2:
			at = time.Date(rapid.IntRange(2027, 9999).Draw(t, "future"), 1, 1, 0, 0, 0, 0, time.UTC)
		}
		skips += uint64(rapid.IntRange(0, 5).Draw(t, "skips"))
		e := breaker.Event{
			Time: at, Circuit: rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "circuit"),
			Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Reason: rapid.SampledFrom([]string{"refused", "timeout", "probe succeeded"}).Draw(t, "reason"),
			From: rapid.SampledFrom(phases).Draw(t, "from"), To: rapid.SampledFrom(phases).Draw(t, "to"),
			TimedOut: rapid.Bool().Draw(t, "timed_out"),
		}
		if rapid.Bool().Draw(t, "marked") {
			e.Skips = skips
			e.Since = at.Add(-time.Duration(rapid.IntRange(-60, 3600).Draw(t, "since")) * time.Second)
		}
		if rapid.Bool().Draw(t, "retry") {
			e.Retry = breaker.RetryRecord{Attempts: rapid.IntRange(1, 5).Draw(t, "attempts"), Timeout: breaker.Duration(rapid.IntRange(0, 30).Draw(t, "timeout")) * breaker.Duration(time.Second)}
		}
		events[i] = e
	}
	return events
}

// Whatever the events, and however their circuits interleave, the outages
// keep their order, their times stay believable, and what the stores return
// (eventorder.Sort's order) reads the same as the order they were written in.
func TestOutagesOfAnyEventSequence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		events := drawEvents(t, now)
		outages, ignored := history.Outages(events, nil, now)
		checkOrder(t, outages, now)
		for _, ig := range ignored {
			if ig.Why == "" || !ig.At.IsZero() && (ig.At.Before(history.Epoch) || ig.At.After(now.Add(history.FarFuture))) {
				t.Fatalf("ignored %+v", ig)
			}
		}
		want := outagesJSON(t, outages)
		sorted := slices.Clone(events)
		eventorder.Sort(sorted)
		if got, _ := history.Outages(sorted, nil, now); outagesJSON(t, got) != want {
			t.Fatalf("events as a store returns them read\n%s\nwritten, they read\n%s", outagesJSON(t, got), want)
		}
		grouped := slices.Clone(events)
		slices.SortStableFunc(grouped, func(a, b breaker.Event) int { return cmp.Compare(b.Circuit, a.Circuit) })
		if got, _ := history.Outages(grouped, nil, now); outagesJSON(t, got) != want {
			t.Fatalf("circuits one after another read\n%s\ninterleaved, they read\n%s", outagesJSON(t, got), want)
		}
	})
}

func outagesJSON(t *rapid.T, outages []history.Outage) string {
	b, err := json.Marshal(outages)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
