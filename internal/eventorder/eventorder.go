// Package eventorder is the order fusebox.Admin.AllEvents returns events
// of several circuits in, which the stores of this module (file, mem,
// redis) share.
package eventorder

import (
	"cmp"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Sort orders events, which hold each circuit's events in the order
// its store appended them, by time across circuits while keeping each
// circuit's own order: an event sorts at the latest time its circuit has
// reached so far, so that one written under a clock stepped back stays
// after the events stored before it. Events of the same time sort by
// circuit name. It is the order fusebox.Admin.AllEvents returns.
func Sort(events []breaker.Event) {
	type keyed struct {
		at time.Time
		e  breaker.Event
	}
	reached := map[string]time.Time{}
	ks := make([]keyed, len(events))
	for i, e := range events {
		at, seen := reached[e.Circuit]
		if !seen || e.Time.After(at) {
			at = e.Time
		}
		reached[e.Circuit] = at
		ks[i] = keyed{at, e}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.e.Circuit, b.e.Circuit)
	})
	for i, k := range ks {
		events[i] = k.e
	}
}
