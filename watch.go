package fusebox

import (
	"context"
	"fmt"
	"slices"
)

// CauseWatch is the cause of a failure a watch reported: something the
// circuit's health is read from (an MQTT topic, for fusebox serve) said
// it is down.
const CauseWatch Cause = "watch"

// watchDown applies a watch's verdict that the circuit is down, for reason:
// a closed circuit records the failure and opens at once for p.OpenMax; an
// open one whose open period has ended (half-open) opens again, and one
// with less than a quarter of p.OpenMax left has its period renewed
// quietly, so that runs keep skipping while the watch says down. A circuit
// forced open by hand is left as it is, as is an open one with time left:
// changed is false, and nothing need be stored.
func (s *State) watchDown(p BreakerPolicy, now Instant, reason string) (events []Event, changed bool) {
	events = s.settle(now)
	period := max(p.OpenMax, p.OpenFor)
	v := s.View(now)
	switch {
	case s.Phase == ForcedOpen:
		return events, len(events) > 0
	case s.Phase == Open && v.Phase == Open && v.ReopensIn >= period/4:
		return events, len(events) > 0
	case s.Phase == Open && v.Phase == Open:
		s.OpenedAt, s.OpenPeriod, s.OpenUntil = now, Duration(period), now.Wall.Add(period)
		return events, true
	}
	events = append(events, Event{Time: now.Wall, Circuit: s.Name, Kind: EventFailure, Reason: reason, Cause: CauseWatch})
	s.LastFailureAt, s.LastFailure = now.Wall, reason
	s.failed(now)
	return append(events, s.open(now, period, reason)), true
}

// watchUp applies a watch's verdict that the circuit is up, for reason: an
// open (or half-open) circuit closes, as after a probe that succeeded. A
// closed circuit, or one forced open by hand, is left as it is: changed is
// false.
func (s *State) watchUp(now Instant, reason string) (events []Event, changed bool) {
	events = s.settle(now)
	if s.Phase != Open {
		return events, len(events) > 0
	}
	s.recovered(now)
	return append(events, s.transition(now, Closed, reason)), true
}

// Watched applies a watch's verdict, up or down, to the named circuit, for
// reason. Down records a failure and opens a closed circuit at once for
// p.OpenMax, opens a half-open one again, and quietly renews an open period
// with less than a quarter of p.OpenMax left, so that runs keep skipping
// while the watch says down. Up closes an open or half-open circuit, as a
// successful probe does. A circuit forced open by hand is left as it is.
// Transitions are logged and told to listeners as any call's are. A verdict
// that changes nothing is judged on a state read without a lock and writes
// nothing: a watch that hears "online" every minute costs a Load. Watched
// returns the circuit's view afterwards, and whether it changed.
func (c *Circuits) Watched(ctx context.Context, name string, p BreakerPolicy, up bool, reason string) (View, bool, error) {
	if err := ValidateName(name); err != nil {
		return View{}, false, err
	}
	apply := func(st *State, now Instant) ([]Event, bool) {
		if up {
			return st.watchUp(now, reason)
		}
		return st.watchDown(p, now, reason)
	}
	if st, err := c.store.Load(ctx, name); err == nil {
		now := c.clock.Now()
		look := st
		look.Probes, look.Recoveries = slices.Clone(st.Probes), slices.Clone(st.Recoveries)
		if _, changed := apply(&look, now); !changed {
			return st.View(now), false, nil
		}
	}
	var now Instant
	var events []Event
	var changed bool
	skips := skipTotal(ctx, c.store, name)
	st, err := c.store.Update(ctx, name, func(st *State) ([]Event, bool) {
		now = c.clock.Now()
		events, changed = apply(st, now)
		stampSkips(events, skips)
		return events, changed
	})
	if err != nil {
		return View{}, false, fmt.Errorf("update %s: %w", name, err)
	}
	k := &call{c: c, name: name}
	k.logEvents(events)
	return st.View(now), changed, nil
}
