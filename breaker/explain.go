package breaker

import (
	"fmt"
	"time"
)

// Action is what a call of a circuit would do.
type Action string

// The actions of a Verdict.
const (
	ActionRun   Action = "run"   // the circuit is closed: the call runs
	ActionSkip  Action = "skip"  // the circuit is open: the call fails fast, nothing run
	ActionProbe Action = "probe" // the circuit is half-open: the call would be the probe
)

// Verdict says what a call of a circuit would do at a moment, and why: the
// answer to "why did my job not run?" without reading the state file.
type Verdict struct {
	Action Action
	Phase  Phase // as of the moment: HalfOpen once an open period has ended
	// Until is when a skipped call's circuit may next be probed (the end
	// of its open period, or of the probe lease another caller holds);
	// zero when it is closed, to be probed now, or tripped until reset.
	Until time.Time
	Why   string // one line
}

// Explain returns what a call under p would do with s at now. It changes
// nothing: it is the decision Decide and Acquire would make, as a caller
// without the store's lock sees it, in words.
func (s *State) Explain(p Policy, now Instant) Verdict {
	bounded := *s
	bounded.BoundOpen(p)
	s = &bounded
	v := s.View(now)
	at := func(t time.Time) string { return t.Local().Format(time.DateTime) }
	last := ""
	if s.LastFailure != "" {
		last = ", last: " + s.LastFailure
		if !s.LastFailureAt.IsZero() {
			last += " (" + at(s.LastFailureAt) + ")"
		}
	}
	out := Verdict{Phase: v.Phase}
	switch v.Phase {
	case Closed:
		out.Action = ActionRun
		switch {
		case s.Phase == ForcedOpen:
			out.Why = "closed: the trip for maintenance has ended"
		case p.FailureRate != nil && s.Recent != "":
			out.Why = fmt.Sprintf("closed: %s; it opens at %.0f%% of at least %d", s.tripReason(p), p.FailureRate.Threshold*100, p.FailureRate.MinAttempts)
		case s.ConsecutiveFailures > 0:
			out.Why = fmt.Sprintf("closed: %d of the %d consecutive failures that open it%s", s.ConsecutiveFailures, max(p.TripAfter, 1), last)
		default:
			out.Why = "closed"
		}
	case ForcedOpen:
		out.Action, out.Until = ActionSkip, v.OpenUntil
		if v.OpenUntil.IsZero() {
			out.Why = "tripped for maintenance at " + at(s.OpenedAt.Wall) + ", until reset (fusebox reset)"
		} else {
			out.Why = "tripped for maintenance at " + at(s.OpenedAt.Wall) + ", until " + at(v.OpenUntil)
		}
	case Open:
		out.Action, out.Until = ActionSkip, v.OpenUntil
		out.Why = fmt.Sprintf("opened at %s by %s%s", at(s.OpenedAt.Wall), s.tripReason(p), last)
		if s.Reopens > 0 {
			out.Why += fmt.Sprintf("; %d failed probe(s) since", s.Reopens)
		}
	case HalfOpen:
		ended := s.OpenedAt.Wall.Add(time.Duration(s.OpenPeriod))
		if v.ActiveProbes < max(p.Probes, 1) {
			out.Action = ActionProbe
			out.Why = fmt.Sprintf("half-open: the open period ended at %s; this call would be the probe%s", at(ended), last)
			break
		}
		out.Action = ActionSkip
		for _, l := range s.Probes {
			if d, ok := now.Since(l.Granted); ok && d < time.Duration(l.For) {
				if end := now.Wall.Add(time.Duration(l.For) - d); out.Until.IsZero() || end.Before(out.Until) {
					out.Until = end
				}
			}
		}
		out.Why = fmt.Sprintf("half-open: another caller holds the probe (its lease ends at %s)", at(out.Until))
	}
	if !v.Settled {
		out.Why += "; its times come from another boot or from this clock's future, and the next call settles them under the lock"
	}
	return out
}
