package statestore

import (
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// strictness ranks what a circuit's state makes callers do at now: 0 run
// (closed), 1 probe (half-open), 2 skip until the open period ends (open),
// 3 skip until a trip by hand ends, 4 skip until reset. A trip whose time
// is over, or an open period that has ended, ranks as what it has become.
func strictness(st breaker.State, now breaker.Instant) int {
	switch st.View(now).Phase {
	case breaker.HalfOpen:
		return 1
	case breaker.Open:
		return 2
	case breaker.ForcedOpen:
		if st.OpenPeriod == 0 { // until reset
			return 4
		}
		return 3
	}
	return 0
}

// stricter reports whether a holds callers back more than b at now: a
// higher strictness, or the same one (open, or tripped for a time) lasting
// longer.
func stricter(a, b breaker.State, now breaker.Instant) bool {
	ra, rb := strictness(a, now), strictness(b, now)
	if ra != rb || ra == 0 || ra == 4 {
		return ra > rb
	}
	return openEnd(a).After(openEnd(b))
}

func openEnd(st breaker.State) time.Time {
	return st.OpenedAt.Wall.Add(time.Duration(st.OpenPeriod))
}

// adopt returns local as the state to store over shared: local's phase and
// its open period, with a generation past both (so that a result of a call
// begun before is dropped) and no probe leases (they were granted by the
// store local came from).
func adopt(local, shared breaker.State) breaker.State {
	local.Name = shared.Name
	local.Generation = max(local.Generation, shared.Generation) + 1
	local.Probes = nil
	return local
}
