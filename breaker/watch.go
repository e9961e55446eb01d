package breaker

// causeWatch is the cause of a failure a watch reported: something the
// circuit's health is read from (an MQTT topic, for fusebox serve) said
// it is down.
const causeWatch Cause = "watch"

// Watch applies a watch's verdict, up or down, to the circuit, for reason,
// and reports whether it changed anything that must be stored.
func (s *State) Watch(p Policy, now Instant, up bool, reason string) (events []Event, changed bool) {
	if up {
		return s.watchUp(now, reason)
	}
	return s.watchDown(p, now, reason)
}

// watchDown applies a watch's verdict that the circuit is down: a closed
// circuit records the failure and opens at once for p.OpenMax; an open one
// whose open period has ended (half-open) opens again, and one
// with less than a quarter of p.OpenMax left has its period renewed
// quietly, so that runs keep skipping while the watch says down. A circuit
// forced open by hand is left as it is, as is an open one with time left:
// changed is false, and nothing need be stored.
func (s *State) watchDown(p Policy, now Instant, reason string) (events []Event, changed bool) {
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
	events = append(events, Event{Time: now.Wall, Circuit: s.Name, Kind: EventFailure, Reason: reason, Cause: causeWatch})
	s.LastFailureAt, s.LastFailure = now.Wall, reason
	s.failed(now)
	return append(events, s.open(now, period, reason)), true
}

// watchUp applies a watch's verdict that the circuit is up: an
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
