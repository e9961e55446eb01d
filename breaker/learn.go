package breaker

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Recovery is how one outage ended, measured from the moment its circuit
// first opened: still down at Down (its last failed probe; 0 when the first
// probe succeeded) and back by Up (the probe or health check that closed
// it). The endpoint came back somewhere between the two.
type Recovery struct {
	Down Duration `json:"down"`
	Up   Duration `json:"up"`
}

// Learning open periods.
const (
	// minLearnedOpenFor is the shortest open period open_for: auto learns.
	minLearnedOpenFor = 5 * time.Second
	// keptRecoveries is how many outages open_for: auto learns from.
	keptRecoveries = 5
)

// recovered records how the outage under way ended, now, when it is known
// when it began.
func (s *State) recovered(now Instant) {
	if s.FirstOpenedAt.Wall.IsZero() {
		return
	}
	up, ok := now.Since(s.FirstOpenedAt)
	if !ok || up <= 0 {
		return // times from another boot, or a clock gone backwards: nothing to learn
	}
	var down time.Duration
	if s.Reopens > 0 {
		if d, ok := s.OpenedAt.Since(s.FirstOpenedAt); ok && d < up {
			down = d // the last failed probe opened the period that ends now
		}
	}
	s.Recoveries = keepRecoveries(append(s.Recoveries, Recovery{Down: Duration(down), Up: Duration(up)}))
}

// keepRecoveries returns the last keptRecoveries of rs, and before them the
// dropped one with the longest Down when it is longer than any kept: a
// failed probe's "still down" is evidence no run of outages the first probe
// ended can argue away. Without it, five quick recoveries would halve the
// period below an outage seen, and the probe there would fail (8 s outages
// were probed at 5 s every sixth outage, at the cost of a doubled period).
func keepRecoveries(rs []Recovery) []Recovery {
	extra := len(rs) - keptRecoveries
	if extra <= 0 {
		return rs
	}
	dropped, kept := rs[:extra], rs[extra:]
	longest := slices.MaxFunc(dropped, func(a, b Recovery) int { return cmp.Compare(a.Down, b.Down) })
	out := make([]Recovery, 0, keptRecoveries+1)
	if longest.Down > slices.MaxFunc(kept, func(a, b Recovery) int { return cmp.Compare(a.Down, b.Down) }).Down {
		out = append(out, longest)
	}
	return append(out, kept...)
}

// LearnedOpenFor returns the first open period of the next outage under
// open_for: auto, and how it was learned, in words.
//
// Across the circuit's recent recoveries, the endpoint was still down at the
// latest Down and back by the earliest Up: when those agree (Down < Up), the
// next outage is probed halfway between them, and each outage narrows the
// range; when they do not (the endpoint took longer once than it did
// another time), it is probed an eighth past the latest Down. Either way
// never before minLearnedOpenFor nor after OpenMax, nor before the longest
// Down seen, which is kept past the last outages (keepRecoveries). With
// nothing recorded it is OpenFor. A bridge that takes four minutes to
// restart is so probed once, at a little past four minutes, after a few
// outages.
func (s *State) LearnedOpenFor(p Policy) (time.Duration, string) {
	if len(s.Recoveries) == 0 {
		first := p.OpenFor
		if p.OpenMax > 0 {
			first = min(first, p.OpenMax) // the default first guess under a short open_max
		}
		return first, "no outage recorded yet: open_for's first guess"
	}
	down, up := time.Duration(0), time.Duration(1<<63-1)
	for _, r := range s.Recoveries {
		down, up = max(down, time.Duration(r.Down)), min(up, time.Duration(r.Up))
	}
	d := down + down/8
	if down < up {
		d = max(d, down+(up-down)/2)
	}
	d = min(max(d, minLearnedOpenFor), max(p.OpenMax, minLearnedOpenFor))
	from := fmt.Sprintf("the last %d outage(s)", min(len(s.Recoveries), keptRecoveries))
	if len(s.Recoveries) > keptRecoveries {
		from += " and the longest seen"
	}
	how := fmt.Sprintf("learned from %s: back by %s", from, up.Round(time.Second))
	if down > 0 {
		how = fmt.Sprintf("learned from %s: still down at %s, back by %s", from, down.Round(time.Second), up.Round(time.Second))
	}
	return d, how
}
