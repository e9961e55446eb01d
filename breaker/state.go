package breaker

import (
	"time"
)

// Phase is the state of a circuit.
type Phase string

// The phases. Closed, Open and ForcedOpen are stored; HalfOpen is derived: an
// Open circuit whose open period has ended is half-open until a probe settles
// it, whether or not any call has come since.
const (
	Closed     Phase = "closed"
	Open       Phase = "open"
	HalfOpen   Phase = "half_open"
	ForcedOpen Phase = "forced_open"
)

// Lease is a half-open probe's claim on a circuit. It expires, so a probe
// killed with SIGKILL does not wedge the circuit.
type Lease struct {
	ID      string   `json:"id"`
	Granted Instant  `json:"granted"`
	For     Duration `json:"for"`
}

// State is what a fusebox.Store keeps for one circuit. Its methods are the
// breaker state machine: pure functions of (state, event, now) that mutate
// the receiver and return the events to record. A State is a value; it is
// not safe for concurrent use, and stores serialise updates to it.
type State struct {
	Name  string `json:"name"`
	Phase Phase  `json:"state"` // Closed, Open or ForcedOpen; never HalfOpen
	// Generation counts transitions. A result from a call that began in an
	// older generation does not move the breaker.
	Generation          uint64 `json:"generation"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	// Recent holds the outcomes of the last attempts while closed, oldest
	// first, 's' for success and 'f' for failure; kept only when a failure
	// rate is configured.
	Recent string `json:"recent,omitempty"`
	// FailingSince is the time of the first of the ConsecutiveFailures;
	// zero when there are none.
	FailingSince time.Time `json:"failing_since,omitzero"`

	OpenedAt   Instant   `json:"opened_at,omitzero"`
	OpenPeriod Duration  `json:"open_period,omitzero"` // 0 with ForcedOpen: until reset
	OpenUntil  time.Time `json:"open_until,omitzero"`  // for people reading the file; OpenedAt+OpenPeriod rules
	// Reopens counts failed probes since the circuit first opened.
	Reopens int `json:"reopens,omitempty"`
	// FirstOpenedAt is when the outage's circuit first opened (OpenedAt
	// moves on with every failed probe); zero while closed.
	FirstOpenedAt Instant `json:"first_opened_at,omitzero"`
	// Recoveries are how the last outages ended, oldest first: what
	// open_for: auto learns from (LearnedOpenFor).
	Recoveries []Recovery `json:"recoveries,omitempty"`
	Probes     []Lease    `json:"probes,omitempty"`

	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
	LastFailure   string    `json:"last_failure,omitempty"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
	// Totals are not part of the State: they change on every call and are
	// kept apart, without a lock (fusebox.Counts, fusebox.Store.Count).
}

// View is a circuit's state as of a moment, derived from the stored State.
type View struct {
	Phase Phase
	// OpenUntil is when an open circuit becomes half-open (zero when closed
	// or forced open with no end); ReopensIn is the time until then.
	OpenUntil time.Time
	ReopensIn time.Duration
	// ActiveProbes counts unexpired probe leases.
	ActiveProbes int
	// Settled is false when the stored times come from another boot, or lie
	// in the future of the clock reading them (a clock that went backwards,
	// a time namespace ahead): the state must be rebased under the lock
	// before it is acted on.
	Settled bool
}

// View derives the circuit's phase at now.
func (s *State) View(now Instant) View {
	v := s.view(now)
	if v.ReopensIn > 0 {
		v.OpenUntil = now.Wall.Add(v.ReopensIn)
	}
	return v
}

// view is View without OpenUntil, which the breaker's decisions do not need.
func (s *State) view(now Instant) View {
	v := View{Phase: s.Phase, Settled: true}
	if s.Phase == "" {
		v.Phase = Closed
	}
	if s.Phase == Closed || s.Phase == "" {
		return v
	}
	if s.Phase == ForcedOpen && s.OpenPeriod == 0 {
		return v
	}
	elapsed, ok := now.Since(s.OpenedAt)
	v.Settled = ok
	// Compare before subtracting: a nonsense period (a hand edit, a bit
	// flip) must end the open state, not wrap around to centuries.
	if period := time.Duration(s.OpenPeriod); period > 0 && elapsed < period {
		v.ReopensIn = period - elapsed
		return v
	}
	if s.Phase == ForcedOpen {
		v.Phase = Closed // a timed trip ends closed: it said nothing about health
		return v
	}
	v.Phase = HalfOpen
	for _, l := range s.Probes {
		d, ok := now.Since(l.Granted)
		v.Settled = v.Settled && ok
		if d < time.Duration(l.For) {
			v.ActiveProbes++
		}
	}
	return v
}

// TripInForce reports whether, at the wall time now, the circuit is forced
// open by hand and its trip has not ended: until reset, or timed and not yet
// over. Garbage collection keeps such a circuit however long it goes unused,
// so a job does not run in its maintenance window. A trip whose start lies
// in the future of now counts as in force from now (see Instant.Since).
func (s *State) TripInForce(now time.Time) bool {
	return s.Phase == ForcedOpen && s.View(Instant{Wall: now}).Phase == ForcedOpen
}

// rebase re-anchors stored instants taken in another boot, or in the future
// of now's clocks, to now's clocks, keeping the elapsed time the wall clock
// gives (never negative). From then on elapsed time is
// measured on this boot's clock, so an open period is neither skipped by a
// later jump nor stretched by an earlier one.
func (s *State) rebase(now Instant) {
	re := func(i *Instant) {
		if i.Wall.IsZero() {
			return
		}
		if _, ok := now.Since(*i); ok {
			return
		}
		d, _ := now.Since(*i)
		*i = Instant{Wall: now.Wall.Add(-d), Boot: now.Boot, BootTime: now.BootTime - d}
	}
	re(&s.OpenedAt)
	if !s.OpenUntil.IsZero() {
		s.OpenUntil = s.OpenedAt.Wall.Add(time.Duration(s.OpenPeriod))
	}
	for k := range s.Probes {
		re(&s.Probes[k].Granted)
	}
}

// settle applies the transitions that time alone makes: a timed trip that has
// ended closes the circuit, and expired probe leases are dropped.
func (s *State) settle(now Instant) []Event {
	s.rebase(now)
	s.UpdatedAt = now.Wall
	if s.Phase == "" {
		s.Phase = Closed
	}
	v := s.View(now)
	if s.Phase == ForcedOpen && v.Phase == Closed {
		return []Event{s.transition(now, Closed, "forced open period ended")}
	}
	live := s.Probes[:0]
	for _, l := range s.Probes {
		if d, _ := now.Since(l.Granted); d < time.Duration(l.For) {
			live = append(live, l)
		}
	}
	s.Probes = live
	if len(s.Probes) == 0 {
		s.Probes = nil
	}
	return nil
}

// transition moves the circuit to phase to, bumping the generation, and returns
// the event that records it.
func (s *State) transition(now Instant, to Phase, reason string) Event {
	e := Event{Time: now.Wall, Circuit: s.Name, Kind: EventTransition, From: s.View(now).Phase, To: to, Reason: reason, Since: s.FailingSince}
	s.Generation++
	s.Phase = to
	s.Probes = nil
	s.Recent = ""
	if to == Closed {
		s.ConsecutiveFailures = 0
		s.FailingSince = time.Time{}
		s.OpenedAt, s.OpenPeriod, s.OpenUntil, s.Reopens = Instant{}, 0, time.Time{}, 0
	}
	if to != Open {
		s.FirstOpenedAt = Instant{} // closed, or tripped by hand: that outage teaches nothing more
	}
	return e
}

// open moves the circuit to Open for period, starting now.
func (s *State) open(now Instant, period time.Duration, reason string) Event {
	if s.Phase != Open {
		s.FirstOpenedAt = now
	}
	e := s.transition(now, Open, reason)
	s.OpenedAt = now
	s.OpenPeriod = Duration(period)
	s.OpenUntil = now.Wall.Add(period)
	e.For = Duration(period)
	return e
}
