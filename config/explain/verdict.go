package explain

import (
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// The actions of a verdict: what a call of a circuit would do.
const (
	actionRun   = "run"   // the circuit is closed: the call runs
	actionSkip  = "skip"  // the circuit is open: the call fails fast, nothing run
	actionProbe = "probe" // the circuit is half-open: the call would be the probe
)

// verdict says what a call of a circuit would do at a moment, and why: the
// answer to "why did my job not run?" without reading the state file.
type verdict struct {
	action string
	phase  breaker.Phase // as of the moment: HalfOpen once an open period has ended
	// until is when a skipped call's circuit may next be probed (the end
	// of its open period, or of the probe lease another caller holds);
	// zero when it is closed, to be probed now, or tripped until reset.
	until time.Time
	why   string // one line
}

// judge returns what a call under p would do with s at now. It changes
// nothing: it is the decision State.Decide and State.Acquire would make, as
// a caller without the store's lock sees it, in words.
func judge(s breaker.State, p breaker.Policy, now breaker.Instant) verdict {
	s.BoundOpen(p)
	v := s.View(now)
	at := func(t time.Time) string { return t.Local().Format(time.DateTime) }
	last := ""
	if s.LastFailure != "" {
		last = ", last: " + s.LastFailure
		if !s.LastFailureAt.IsZero() {
			last += " (" + at(s.LastFailureAt) + ")"
		}
	}
	out := verdict{phase: v.Phase}
	switch v.Phase {
	case breaker.Closed:
		out.action = actionRun
		switch {
		case s.Phase == breaker.ForcedOpen:
			out.why = "closed: the trip for maintenance has ended"
		case p.FailureRate != nil && s.Recent != "":
			out.why = fmt.Sprintf("closed: %s; it opens at %.0f%% of at least %d", s.TripReason(p), p.FailureRate.Threshold*100, p.FailureRate.MinAttempts)
		case s.ConsecutiveFailures > 0:
			out.why = fmt.Sprintf("closed: %d of the %d consecutive failures that open it%s", s.ConsecutiveFailures, max(p.TripAfter, 1), last)
		default:
			out.why = "closed"
		}
	case breaker.ForcedOpen:
		out.action, out.until = actionSkip, v.OpenUntil
		if v.OpenUntil.IsZero() {
			out.why = "tripped for maintenance at " + at(s.OpenedAt.Wall) + ", until reset (fusebox reset)"
		} else {
			out.why = "tripped for maintenance at " + at(s.OpenedAt.Wall) + ", until " + at(v.OpenUntil)
		}
	case breaker.Open:
		out.action, out.until = actionSkip, v.OpenUntil
		out.why = fmt.Sprintf("opened at %s by %s%s", at(s.OpenedAt.Wall), s.TripReason(p), last)
		if s.Reopens > 0 {
			out.why += fmt.Sprintf("; %d failed probe(s) since", s.Reopens)
		}
	case breaker.HalfOpen:
		ended := s.OpenedAt.Wall.Add(time.Duration(s.OpenPeriod))
		if v.ActiveProbes < max(p.Probes, 1) {
			out.action = actionProbe
			out.why = fmt.Sprintf("half-open: the open period ended at %s; this call would be the probe%s", at(ended), last)
			break
		}
		out.action = actionSkip
		for _, l := range s.Probes {
			if d, ok := now.Since(l.Granted); ok && d < time.Duration(l.For) {
				if end := now.Wall.Add(time.Duration(l.For) - d); out.until.IsZero() || end.Before(out.until) {
					out.until = end
				}
			}
		}
		out.why = fmt.Sprintf("half-open: another caller holds the probe (its lease ends at %s)", at(out.until))
	}
	if !v.Settled {
		out.why += "; its times come from another boot or from this clock's future, and the next call settles them under the lock"
	}
	return out
}
