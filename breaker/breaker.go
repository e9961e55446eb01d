package breaker

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Permit is what a caller holds while one attempt runs. It is handed back with
// the attempt's Outcome to Record.
type Permit struct {
	Generation uint64
	Lease      string // the probe lease ID when the attempt is a half-open probe
	// Health marks a health check's probe of an open circuit, granted
	// before its open period ends (Acquire's health): its success closes the
	// circuit, its failure leaves the open period as it was.
	Health bool
	// Unprotected is set when the store could not be used and the attempt runs
	// as if the circuit were closed; nothing is recorded for it.
	Unprotected bool
}

// Outcome is the result of one attempt.
type Outcome struct {
	Failed bool
	// Neutral outcomes count neither for nor against the breaker: a call
	// cancelled by its user, a failure that is plainly local (no network), a
	// 4xx that says the request, not the endpoint, was wrong.
	Neutral bool
	Attempt int
	Reason  string
	// TimedOut, on a failure, says the attempt's timeout or the call's
	// deadline cut it short.
	TimedOut bool
	Cause    Cause // on a failure, its kind
	// OpenFor, on a counted failure, opens the circuit at once for that long
	// (capped at OpenMax): a 429 with Retry-After asks every caller to wait.
	OpenFor time.Duration
}

// Decide answers, from a state read without a lock, whether an attempt may
// run. It returns a Permit for a closed circuit, ErrOpen (an *OpenError) for an
// open one, and any other error when the decision must be made under the
// store's lock with Acquire: the circuit is half-open, or its times must be
// rebased.
func (s *State) Decide(now Instant) (Permit, error) {
	v := s.view(now)
	switch {
	case !v.Settled:
		return Permit{}, errNeedLock
	case v.Phase == Closed && s.Phase == ForcedOpen:
		return Permit{}, errNeedLock // the timed trip ended: record it
	case v.Phase == Closed:
		return Permit{Generation: s.Generation}, nil
	case v.Phase == HalfOpen:
		return Permit{}, errNeedLock
	}
	return Permit{}, &OpenError{Name: s.Name, Phase: v.Phase, ReopensIn: v.ReopensIn}
}

// Acquire makes the decision of Decide under the store's lock, granting a
// half-open probe lease (leaseID, for p.ProbeLease) while fewer than p.Probes
// unexpired leases are held.
//
// With health set, the attempt is a health check (fusebox serve's): it may
// also probe an open circuit before its open period ends, under the same
// probe leases (at most p.Probes at once, across every process), so that a
// circuit closes as soon as its endpoint is back, not when the open period
// happens to end. A circuit forced open is refused: a trip by hand says
// nothing about health.
func (s *State) Acquire(p Policy, now Instant, leaseID string, health bool) (Permit, []Event, error) {
	if health {
		return s.acquireHealth(p, now, leaseID)
	}
	s.BoundOpen(p)
	events := s.settle(now)
	v := s.View(now)
	switch v.Phase {
	case Closed:
		return Permit{Generation: s.Generation}, events, nil
	case HalfOpen:
		if len(s.Probes) < max(p.Probes, 1) {
			s.Probes = append(s.Probes, Lease{ID: leaseID, Granted: now, For: Duration(p.ProbeLease)})
			return Permit{Generation: s.Generation, Lease: leaseID}, events, nil
		}
	}
	return Permit{}, events, &OpenError{Name: s.Name, Phase: v.Phase, ReopensIn: v.ReopensIn, Probing: v.Phase == HalfOpen}
}

// acquireHealth is Acquire for a health check.
func (s *State) acquireHealth(p Policy, now Instant, leaseID string) (Permit, []Event, error) {
	s.BoundOpen(p)
	events := s.settle(now)
	v := s.View(now)
	if v.Phase != Open {
		permit, more, err := s.Acquire(p, now, leaseID, false)
		return permit, append(events, more...), err
	}
	if len(s.Probes) < max(p.Probes, 1) {
		s.Probes = append(s.Probes, Lease{ID: leaseID, Granted: now, For: Duration(p.ProbeLease)})
		return Permit{Generation: s.Generation, Lease: leaseID, Health: true}, events, nil
	}
	return Permit{}, events, &OpenError{Name: s.Name, Phase: v.Phase, ReopensIn: v.ReopensIn, Probing: true}
}

// QuietSuccess reports whether a successful attempt holding permit would
// change nothing in s: the circuit is closed with no failure to forget, the
// attempt is no probe, and a failure-rate window (if any) is already all
// successes. Such a success is only counted (fusebox.Store.Count), with no Update.
//
// Judged on a state read without a lock, the answer may be stale; that is
// sound, because the success can be ordered at the moment of that read,
// before any failure recorded since.
func (s *State) QuietSuccess(p Policy, permit Permit) bool {
	switch {
	case permit.Unprotected:
		return true
	case permit.Lease != "", s.Phase != Closed && s.Phase != "", s.ConsecutiveFailures != 0, len(s.Probes) > 0:
		return false
	case p.FailureRate == nil:
		return true
	}
	return len(s.Recent) >= p.FailureRate.Window && !strings.Contains(s.Recent, "f")
}

// Record applies an attempt's outcome. The failure log always records a
// failure; the breaker moves only when the permit is from the current
// generation. Totals are not kept here (see fusebox.Counts).
func (s *State) Record(p Policy, now Instant, permit Permit, o Outcome) []Event {
	if permit.Unprotected {
		return nil
	}
	s.BoundOpen(p)
	events := s.settle(now)
	if o.Failed {
		kind := EventFailure
		if o.Neutral {
			kind = EventNeutralFailure
		}
		events = append(events, Event{Time: now.Wall, Circuit: s.Name, Kind: kind, Attempt: o.Attempt, Reason: o.Reason, TimedOut: o.TimedOut, Cause: o.Cause})
		if !o.Neutral {
			s.LastFailureAt = now.Wall
			s.LastFailure = o.Reason
		}
	}
	if permit.Lease != "" {
		s.dropLease(permit.Lease)
	}
	if permit.Generation != s.Generation || o.Neutral {
		return events
	}
	if permit.Health { // a health check of an open circuit
		if !o.Failed && s.Phase == Open {
			s.recovered(now)
			return append(events, s.transition(now, Closed, "health check succeeded"))
		}
		return events
	}

	if permit.Lease != "" { // a half-open probe settles the circuit
		if !o.Failed {
			s.recovered(now)
			return append(events, s.transition(now, Closed, "probe succeeded"))
		}
		s.failed(now)
		reopens := s.Reopens + 1
		period := s.openPeriod(p, reopens)
		if o.OpenFor > 0 {
			period = min(o.OpenFor, p.OpenMax)
		}
		e := s.open(now, period, "probe failed: "+o.Reason)
		s.Reopens = reopens
		return append(events, e)
	}
	if s.Phase != Closed {
		return events
	}
	if !o.Failed {
		s.ConsecutiveFailures = 0
		s.FailingSince = time.Time{}
		s.remember(p, 's')
		return events
	}
	s.failed(now)
	s.remember(p, 'f')
	switch {
	case o.OpenFor > 0:
		return append(events, s.open(now, min(o.OpenFor, p.OpenMax), "asked to wait: "+o.Reason))
	case s.tripped(p):
		return append(events, s.open(now, s.openPeriod(p, 0), s.TripReason(p)))
	}
	return events
}

// failed counts a failure against the breaker.
func (s *State) failed(now Instant) {
	if s.ConsecutiveFailures == 0 || s.FailingSince.IsZero() {
		s.FailingSince = now.Wall
	}
	s.ConsecutiveFailures++
}

// byHand is who trips or resets a circuit when no one is named: the
// command line or the daemon's API ("tripped by hand").
func byHand(by string) string {
	if by == "" {
		return "hand"
	}
	return by
}

// Trip forces the circuit open, for d or (d == 0) until Reset, its event's
// reason saying by whom ("tripped by MQTT"; "" is by hand): the event log
// records where a trip came from.
func (s *State) Trip(now Instant, d time.Duration, by string) []Event {
	events := s.settle(now)
	by = byHand(by)
	reason := "tripped by " + by
	if d > 0 {
		reason = fmt.Sprintf("tripped by %s for %s", by, d)
	}
	e := s.transition(now, ForcedOpen, reason)
	s.OpenedAt, s.OpenPeriod, s.OpenUntil = now, Duration(d), time.Time{}
	if d > 0 {
		s.OpenUntil = now.Wall.Add(d)
		e.For = Duration(d)
	}
	return append(events, e)
}

// Reset closes the circuit and forgets its failures, its event's reason
// saying by whom ("reset by MQTT"; "" is by hand); totals are kept.
func (s *State) Reset(now Instant, by string) []Event {
	events := s.settle(now)
	return append(events, s.transition(now, Closed, "reset by "+byHand(by)))
}

func (s *State) dropLease(id string) {
	for k, l := range s.Probes {
		if l.ID == id {
			s.Probes = append(s.Probes[:k], s.Probes[k+1:]...)
			break
		}
	}
	if len(s.Probes) == 0 {
		s.Probes = nil
	}
}

// openPeriod is OpenFor (or, with LearnOpenFor, the learned period) *
// OpenMultiplier^reopens, capped at OpenMax.
func (s *State) openPeriod(p Policy, reopens int) time.Duration {
	first := p.OpenFor
	if p.LearnOpenFor {
		first, _ = s.LearnedOpenFor(p)
	}
	return Exp(first, p.OpenMultiplier, p.OpenMax, reopens+1)
}

func (s *State) remember(p Policy, outcome byte) {
	if p.FailureRate == nil {
		return
	}
	s.Recent += string(outcome)
	if extra := len(s.Recent) - p.FailureRate.Window; extra > 0 {
		s.Recent = s.Recent[extra:]
	}
}

func (s *State) tripped(p Policy) bool {
	fr := p.FailureRate
	if fr == nil {
		return s.ConsecutiveFailures >= max(p.TripAfter, 1)
	}
	n := len(s.Recent)
	if n == 0 || n < fr.MinAttempts {
		return false
	}
	// Divide rather than multiply the threshold: 0.55*100 is above 55 in
	// floating point, while 55.0/100 == 0.55 exactly.
	return float64(strings.Count(s.Recent, "f"))/float64(n) >= fr.Threshold
}

// TripReason says what opens, or opened, the circuit under p, from its
// failures so far: "3 consecutive failures", "5 of the last 10 attempts
// failed".
func (s *State) TripReason(p Policy) string {
	if fr := p.FailureRate; fr != nil {
		return fmt.Sprintf("%d of the last %d attempts failed", strings.Count(s.Recent, "f"), len(s.Recent))
	}
	return fmt.Sprintf("%d consecutive failures", s.ConsecutiveFailures)
}

// Exp returns first * multiplier^(n-1), capped at max, for n from 1: the
// n-th of a series of growing periods, an outage's open periods here and
// a backoff's waits in package fusebox. It does not overflow for any n.
func Exp(first time.Duration, multiplier float64, max time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	f := float64(first) * math.Pow(multiplier, float64(n-1))
	if math.IsNaN(f) || f >= float64(max) {
		return max
	}
	return time.Duration(f)
}
