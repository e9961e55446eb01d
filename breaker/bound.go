package breaker

import "time"

// BoundOpen clamps a stored open period to the longest p ever gives one
// (OpenMax, or OpenFor and the shortest learned period when longer), and
// reports whether it did. A state is written by whoever reaches the store
// (another host through a shared Redis, a person with an editor): an open
// period of 876000h must not keep a circuit shut for a century. Only the
// breaker's own Open is bounded; a trip is a person's, for as long as they
// said.
func (s *State) BoundOpen(p Policy) bool {
	longest := max(p.OpenMax, p.OpenFor)
	if p.LearnOpenFor {
		longest = max(longest, minLearnedOpenFor)
	}
	if s.Phase != Open || longest <= 0 || time.Duration(s.OpenPeriod) <= longest {
		return false
	}
	s.OpenPeriod = Duration(longest)
	s.OpenUntil = s.OpenedAt.Wall.Add(longest)
	return true
}
