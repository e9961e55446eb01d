package history_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/history"
)

// Any history the state machine can write reads as outages that begin at
// the first failure before an opening of a closed circuit, end at the next
// closing, never overlap, and count every failure between.
func TestOutagesOfAnyHistory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := testPolicy.WithDefaults()
		st := fusebox.State{Name: "api"}
		now := fusebox.Instant{Wall: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
		var events []fusebox.Event
		openings, failures := 0, 0
		steps := rapid.IntRange(0, 200).Draw(t, "steps")
		for i := range steps {
			now = now.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "wait")) * time.Second)
			var ev []fusebox.Event
			switch action := rapid.SampledFrom([]string{"fail", "fail", "succeed", "trip", "reset"}).Draw(t, "action"); action {
			case "trip":
				ev = st.Trip(now, time.Duration(rapid.IntRange(0, 300).Draw(t, "trip"))*time.Second)
			case "reset":
				ev = st.Reset(now)
			default:
				permit, acq, err := st.Acquire(p.Breaker, now, fmt.Sprint(i))
				ev = acq
				if err == nil {
					ev = append(ev, st.Record(p.Breaker, now, permit, fusebox.Outcome{Failed: action == "fail", Attempt: 1, Reason: "boom"})...)
				}
			}
			for _, e := range ev {
				if e.Kind == fusebox.EventTransition && e.To == fusebox.Open && e.From == fusebox.Closed {
					openings++
				}
			}
			events = append(events, ev...)
		}
		outages := history.Outages(events, func(string) fusebox.Policy { return testPolicy }, now.Wall)
		if len(outages) != openings {
			t.Fatalf("%d outages, %d openings of a closed circuit", len(outages), openings)
		}
		for i, o := range outages {
			failures += o.Failures
			switch {
			case o.Start.After(o.Opened):
				t.Fatalf("outage %d starts %s after it opened %s", i, o.Start, o.Opened)
			case !o.Ongoing && o.End.Before(o.Opened):
				t.Fatalf("outage %d ends %s before it opened %s", i, o.End, o.Opened)
			case o.Ongoing && i != 0:
				t.Fatalf("outage %d of %d is ongoing: only the newest can be", i, len(outages))
			case o.Failures < 1 || o.Duration < 0:
				t.Fatalf("outage %d: %+v", i, o)
			case i > 0 && o.End.After(outages[i-1].Start): // newest first
				t.Fatalf("outage %d ends %s after the newer one starts %s", i, o.End, outages[i-1].Start)
			}
		}
		counted := 0
		for _, e := range events {
			if e.Kind == fusebox.EventFailure {
				counted++
			}
		}
		if failures > counted {
			t.Fatalf("outages count %d failures, %d were logged", failures, counted)
		}
	})
}
