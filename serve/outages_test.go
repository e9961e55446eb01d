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
	got := outages(events, rows, from, now)
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
