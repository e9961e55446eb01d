package fusebox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"
)

// Circuits runs calls under persistent circuit breakers kept in a Store. It is
// safe for concurrent use.
type Circuits struct {
	store  Store
	policy func(name string) Policy
	clock  Clock
	logger *slog.Logger
	draw   func() float64
}

// Option configures Circuits.
type Option func(*Circuits)

// WithPolicy uses p (with defaults filled in) for every circuit.
func WithPolicy(p Policy) Option {
	p = p.WithDefaults()
	return func(c *Circuits) { c.policy = func(string) Policy { return p } }
}

// WithPolicies looks up each circuit's policy by name; defaults are filled in.
func WithPolicies(f func(name string) Policy) Option {
	return func(c *Circuits) { c.policy = func(n string) Policy { return f(n).WithDefaults() } }
}

// WithClock sets the clock (default WallClock).
func WithClock(clk Clock) Option { return func(c *Circuits) { c.clock = clk } }

// WithLogger sets where attempts, waits, skips and transitions are logged
// (default: nowhere).
func WithLogger(l *slog.Logger) Option { return func(c *Circuits) { c.logger = l } }

// WithRand sets the source of jitter draws, uniform in [0, 1).
func WithRand(draw func() float64) Option { return func(c *Circuits) { c.draw = draw } }

// New returns Circuits that keep state in store.
func New(store Store, opts ...Option) *Circuits {
	c := &Circuits{
		store:  store,
		policy: func(string) Policy { return DefaultPolicy() },
		clock:  WallClock{},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		draw:   rand.Float64,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Store returns the store the circuits are kept in.
func (c *Circuits) Store() Store { return c.store }

// Clock returns the clock the circuits are timed by.
func (c *Circuits) Clock() Clock { return c.clock }

// Policy returns the policy of the named circuit.
func (c *Circuits) Policy(name string) Policy { return c.policy(name) }

// Do calls fn under the named circuit's policy: each attempt asks the breaker
// first, runs with the attempt timeout, and records its outcome; failures are
// retried with backoff within the deadline.
//
// Do returns nil when an attempt succeeded; an error matching ErrOpen when the
// circuit was open and fn never ran; an *ExhaustedError wrapping the last
// attempt's error when the call failed; and ctx's error when ctx was cancelled,
// which counts as neither success nor failure.
//
// fn's error steers the retry: wrap it in a *Failure to make it permanent,
// neutral, or to pass on a server's Retry-After.
func (c *Circuits) Do(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	call := &call{c: c, name: name, policy: c.policy(name)}
	return call.run(ctx, fn)
}

// Check reports whether the named circuit is open right now, reading its state
// without a lock and running nothing: an error matching ErrOpen (the skip is
// logged and counted, as Do would) when it is open or forced open, else nil.
// A half-open circuit, or state that cannot be read, gives nil: Do decides
// those. It is the cheap first step of a short-lived process that wants to
// exit at once on an open circuit before doing anything else.
func (c *Circuits) Check(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	st, err := c.store.Load(ctx, name)
	if err != nil {
		return nil
	}
	if _, err := st.Decide(c.clock.Now()); err != nil && err != errNeedLock {
		k := &call{c: c, name: name}
		k.skip(ctx, err)
		return err
	}
	return nil
}

// call is the state of one Do.
type call struct {
	c      *Circuits
	name   string
	policy Policy
	broken bool // the store failed: run unprotected, warn once
}

func (k *call) run(parent context.Context, fn func(context.Context) error) error {
	r := k.policy.Retry
	// One context per attempt, none for the call: the call's deadline is a
	// time that caps each attempt's, which keeps a successful Do cheap.
	deadline, callersDeadline := time.Now().Add(r.Deadline), false
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline, callersDeadline = d, true
	}
	var last error
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		if parent.Err() != nil || !time.Now().Before(deadline) { // a caller's deadline may be gone already
			return k.stopped(parent, attempt-1, last)
		}
		permit, err := k.acquire(parent, deadline)
		if err != nil && !errors.Is(err, ErrOpen) {
			return k.stopped(parent, attempt-1, last)
		}
		if err != nil {
			if attempt == 1 {
				k.skip(parent, err)
				return err
			}
			k.warn("circuit opened while waiting to retry; giving up", "reopens_in", reopensIn(err))
			return &ExhaustedError{Name: k.name, Attempts: attempt - 1, Why: "circuit opened", Err: last}
		}
		if permit.Lease != "" {
			k.info("probing half-open circuit", "attempt", attempt)
		}

		attemptDeadline := time.Now().Add(r.Timeout)
		cutByDeadline := !attemptDeadline.Before(deadline)
		if cutByDeadline {
			attemptDeadline = deadline
		}
		actx, acancel := context.WithDeadline(parent, attemptDeadline)
		err = fn(actx)
		timedOut := actx.Err() == context.DeadlineExceeded
		acancel()

		if err != nil && parent.Err() == context.Canceled {
			k.record(permit, Outcome{Neutral: true, Attempt: attempt})
			return fmt.Errorf("%s: %w", k.name, parent.Err())
		}
		if err == nil {
			if attempt > 1 || permit.Lease != "" {
				k.info("attempt succeeded", "attempt", attempt)
			} else {
				k.debug("attempt succeeded", "attempt", attempt)
			}
			k.record(permit, Outcome{Attempt: attempt})
			return nil
		}

		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{Err: err}
		}
		reason := f.Error()
		switch {
		case timedOut && cutByDeadline && !callersDeadline:
			reason = fmt.Sprintf("deadline of %s reached: %s", r.Deadline, reason)
		case timedOut && cutByDeadline:
			reason = "deadline reached: " + reason
		case timedOut:
			reason = fmt.Sprintf("timeout after %s: %s", r.Timeout, reason)
		}
		k.warn("attempt failed", "attempt", strconv.Itoa(attempt)+"/"+strconv.Itoa(r.Attempts), "reason", reason)
		reopensIn, opened := k.record(permit, Outcome{Failed: true, Neutral: f.Neutral || f.Local, Attempt: attempt, Reason: reason, OpenFor: f.OpenFor})
		last = &attemptError{reason: reason, err: err}

		why := ""
		switch {
		case f.Permanent:
			why = "not retryable"
		case attempt >= r.Attempts:
			why = "attempts exhausted"
		case !time.Now().Before(deadline):
			why = "deadline reached"
		}
		if why != "" {
			return &ExhaustedError{Name: k.name, Attempts: attempt, Why: why, Err: last}
		}
		wait, ok := r.Wait(attempt, prev, k.c.draw(), f.RetryAfter, time.Until(deadline))
		if !ok {
			why = "deadline too close to retry"
			if f.RetryAfter > 0 {
				why = fmt.Sprintf("server asked to wait %s, past the deadline", roundDuration(f.RetryAfter))
			}
			return &ExhaustedError{Name: k.name, Attempts: attempt, Why: why, Err: last}
		}
		if opened && reopensIn > wait {
			// Opened by this very failure, or while it ran: the next attempt
			// would be refused, so waiting for it would be for nothing.
			return &ExhaustedError{Name: k.name, Attempts: attempt, Why: "circuit opened", Err: last}
		}
		k.info("waiting before retry", "wait", roundDuration(wait))
		if !sleep(parent, wait) {
			return k.stopped(parent, attempt, last)
		}
		prev = wait
	}
}

// warn, info and debug log a line about the call's circuit. The level is
// checked first so that a quiet call allocates nothing for its log.
func (k *call) warn(msg string, args ...any)  { k.logAt(slog.LevelWarn, msg, args) }
func (k *call) info(msg string, args ...any)  { k.logAt(slog.LevelInfo, msg, args) }
func (k *call) debug(msg string, args ...any) { k.logAt(slog.LevelDebug, msg, args) }

func (k *call) logAt(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if k.c.logger.Enabled(ctx, level) {
		k.c.logger.Log(ctx, level, msg, append([]any{"circuit", k.name}, args...)...)
	}
}

// stopped is Do's result when its context ended between attempts: the
// caller's cancellation, or a deadline.
func (k *call) stopped(parent context.Context, attempts int, last error) error {
	if parent.Err() == context.Canceled {
		return fmt.Errorf("%s: %w", k.name, parent.Err())
	}
	if last == nil {
		last = context.DeadlineExceeded
	}
	return &ExhaustedError{Name: k.name, Attempts: attempts, Why: "deadline reached", Err: last}
}

// attemptError keeps the last attempt's error with the reason Do logged for
// it (which names timeouts and deadlines).
type attemptError struct {
	reason string
	err    error
}

func (e *attemptError) Error() string { return e.reason }
func (e *attemptError) Unwrap() error { return e.err }

// acquire asks the breaker whether an attempt may run: lock-free for a closed
// or open circuit, under the store's lock when a probe lease is at stake.
func (k *call) acquire(ctx context.Context, deadline time.Time) (Permit, error) {
	if k.broken {
		return Permit{Unprotected: true}, nil
	}
	s := k.c.store
	st, err := s.Load(ctx, k.name)
	if err != nil && ctx.Err() != nil {
		return Permit{}, ctx.Err()
	}
	if err != nil {
		k.storeFailed(err)
		return Permit{Unprotected: true}, nil
	}
	permit, err := st.Decide(k.c.clock.Now())
	if err != errNeedLock {
		return permit, err
	}
	ctx, cancel := context.WithDeadline(ctx, deadline) // a lock wait ends with the call
	defer cancel()
	leaseID := strconv.FormatUint(rand.Uint64(), 36)
	var aerr error
	var events []Event
	_, err = s.Update(ctx, k.name, func(st *State) ([]Event, bool) {
		before := *st
		permit, events, aerr = st.Acquire(k.policy.Breaker, k.c.clock.Now(), leaseID)
		return events, len(events) > 0 || permit.Lease != "" || !sameAnchors(&before, st)
	})
	if err != nil && ctx.Err() != nil {
		return Permit{}, ctx.Err()
	}
	if err != nil {
		k.storeFailed(err)
		return Permit{Unprotected: true}, nil
	}
	k.logEvents(events)
	return permit, aerr
}

func sameAnchors(a, b *State) bool {
	return a.OpenedAt == b.OpenedAt && len(a.Probes) == len(b.Probes)
}

// record stores an attempt's outcome and reports whether the circuit is now
// open, and for how long.
func (k *call) record(permit Permit, o Outcome) (reopensIn time.Duration, opened bool) {
	if k.broken || permit.Unprotected {
		return 0, false
	}
	if !o.Failed && o.Neutral && permit.Lease == "" {
		return 0, false // a cancelled ordinary attempt changes nothing
	}
	// Record even when ctx is done: the outcome happened.
	var events []Event
	st, err := k.c.store.Update(context.Background(), k.name, func(st *State) ([]Event, bool) {
		events = st.Record(k.policy.Breaker, k.c.clock.Now(), permit, o)
		return events, true
	})
	if err != nil {
		k.storeFailed(err)
		return 0, false
	}
	k.logEvents(events)
	v := st.View(k.c.clock.Now())
	switch v.Phase {
	case Open:
		return v.ReopensIn, true
	case ForcedOpen:
		if v.ReopensIn == 0 {
			return NoDeadline, true // until reset
		}
		return v.ReopensIn, true
	}
	return 0, false
}

func (k *call) skip(ctx context.Context, err error) {
	if d := reopensIn(err); d > 0 {
		k.warn("skipped: "+err.Error(), "reopens_in", d)
	} else {
		k.warn("skipped: " + err.Error())
	}
	if serr := k.c.store.RecordSkip(ctx, k.name); serr != nil {
		k.storeFailed(serr)
	}
}

func (k *call) storeFailed(err error) {
	if !k.broken {
		k.warn("state store unusable; running without circuit protection", "err", err)
	}
	k.broken = true
}

func (k *call) logEvents(events []Event) {
	for _, e := range events {
		if e.Kind != EventTransition {
			continue
		}
		switch e.To {
		case Open:
			k.warn("circuit opened", "for", roundDuration(time.Duration(e.For)), "reason", e.Reason)
		case ForcedOpen:
			k.warn("circuit forced open", "reason", e.Reason)
		case Closed:
			k.info("circuit closed", "reason", e.Reason)
		}
	}
}

func reopensIn(err error) time.Duration {
	var oe *OpenError
	if errors.As(err, &oe) {
		return roundDuration(oe.ReopensIn)
	}
	return 0
}

// sleep waits for d or until ctx is done, reporting whether it slept fully.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
