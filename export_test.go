package fusebox

// ErrNeedLock is Decide's answer when the decision must be made again under
// the store's lock (half-open, or stored times to rebase).
var ErrNeedLock = errNeedLock

// WatchDown and WatchUp are the state machine's half of Circuits.Watched.
func (s *State) WatchDown(p BreakerPolicy, now Instant, reason string) ([]Event, bool) {
	return s.watchDown(p, now, reason)
}

func (s *State) WatchUp(now Instant, reason string) ([]Event, bool) { return s.watchUp(now, reason) }
