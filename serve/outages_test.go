package serve

import (
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/status"
)

func TestOutagesFromTransitions(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	from := now.Add(-OutageWindow)
	at := func(h float64) time.Time { return now.Add(time.Duration(h * float64(time.Hour))) }
	tr := func(h float64, name string, fromP, to breaker.Phase, reason string) breaker.Event {
		return breaker.Event{Time: at(h), Circuit: name, Kind: breaker.EventTransition, From: fromP, To: to, Reason: reason}
	}
	opened := at(-1)
	events := []breaker.Event{
		tr(-20, "a", breaker.Closed, breaker.Open, "status 503"),
		{Time: at(-19.5), Circuit: "a", Kind: breaker.EventFailure, Reason: "status 503"},
		tr(-19, "a", breaker.HalfOpen, breaker.Open, "probe failed"), // reopened: the same outage
		tr(-18, "a", breaker.HalfOpen, breaker.Closed, "probe succeeded"),
		tr(-23, "b", breaker.Open, breaker.Closed, "probe succeeded"), // open since before the window
		tr(-1, "c", breaker.Closed, breaker.ForcedOpen, "tripped by hand"),
	}
	rows := []status.Row{
		{Name: "a", Kind: status.KindEndpoint, State: "closed"},
		{Name: "b", Kind: status.KindCircuit, State: "closed"},
		{Name: "c", Kind: status.KindEndpoint, State: "forced_open", OpenedAt: &opened},
		{Name: "d", Kind: status.KindEndpoint, State: "open", LastFailure: "connection refused"}, // open all window, no transition in it
		{Name: "e", Kind: status.KindEndpoint, State: "closed"},
		{Name: "w", Kind: status.KindChain, State: "chain"},
	}
	got, err := outages(rows, from, now, scanOf(events))
	if err != nil {
		t.Fatal(err)
	}
	want := []CircuitOutages{
		{Name: "a", Outages: []Outage{{From: at(-20), To: at(-18), Reason: "status 503"}}},
		{Name: "b", Outages: []Outage{{From: from, To: at(-23)}}},
		{Name: "c", Outages: []Outage{{From: at(-1), To: now, Forced: true, Reason: "tripped by hand"}}},
		{Name: "d", Outages: []Outage{{From: from, To: now, Reason: "connection refused"}}},
		{Name: "e", Outages: []Outage{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("outages:\n got %+v\nwant %+v", got, want)
	}
}

// scanOf hands over a circuit's events of events, in order.
func scanOf(events []breaker.Event) scanner {
	return func(name string, fn func(breaker.Event) bool) error {
		for _, e := range events {
			if e.Circuit == name && !fn(e) {
				break
			}
		}
		return nil
	}
}

// A circuit that flapped all day lists its newest MaxOutages outages, the
// one going on last, and counts the others.
func TestOutagesOfAFlappingCircuitAreBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	from := now.Add(-OutageWindow)
	const flaps = 5*MaxOutages + 7
	var events []breaker.Event
	at := func(i int) time.Time { return from.Add(time.Duration(i) * time.Second) }
	for i := range flaps {
		events = append(events,
			breaker.Event{Time: at(2 * i), Circuit: "f", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open},
			breaker.Event{Time: at(2*i + 1), Circuit: "f", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed})
	}
	opened := at(2 * flaps)
	events = append(events, breaker.Event{Time: opened, Circuit: "f", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Reason: "now"})
	rows := []status.Row{{Name: "f", Kind: status.KindEndpoint, State: "open", OpenedAt: &opened}}
	got, err := outages(rows, from, now, scanOf(events))
	if err != nil {
		t.Fatal(err)
	}
	c := got[0]
	if len(c.Outages) != MaxOutages || c.Earlier != flaps+1-MaxOutages {
		t.Fatalf("%d outages listed, %d earlier; want %d and %d", len(c.Outages), c.Earlier, MaxOutages, flaps+1-MaxOutages)
	}
	if first := c.Outages[0].From; !first.Equal(at(2 * (flaps + 1 - MaxOutages))) {
		t.Errorf("the first listed outage began at %v, want the newest %d's first, at %v", first, MaxOutages, at(2*(flaps+1-MaxOutages)))
	}
	if last := c.Outages[MaxOutages-1]; !last.From.Equal(opened) || !last.To.Equal(now) || last.Reason != "now" {
		t.Errorf("the last outage is %+v, want the one going on", last)
	}
}
