package fusebox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Circuits runs calls under persistent circuit breakers kept in a Store. It is
// safe for concurrent use.
type Circuits struct {
	store     Store
	budgets   BudgetStore // store, when it keeps retry budgets
	policy    func(name string) Policy
	clock     Clock
	logger    *slog.Logger
	draw      func() float64
	listeners *dispatcher // nil without WithListener
	// wall is set when the clock is WallClock: then one time.Now serves
	// both the call's deadline and the breaker's decision.
	wall bool
	// quiet is set when the logger discards everything (the default): a
	// call then skips its log lines with one test.
	quiet bool
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

// WithListener has every failure, transition, success and skip of every
// circuit reported to fn (see EventKind). fn runs on a goroutine of its own,
// one event at a time and in order, after the store's lock is released: a
// listener that is slow, blocks or panics never delays or fails a call.
// Events wait in a bounded queue; when fn falls too far behind, new events
// are dropped and the drop is logged. Flush waits for the queue to drain.
// Several listeners are called in the order they were given.
func WithListener(fn func(Event)) Option {
	return func(c *Circuits) {
		c.dispatcher().fns = append(c.listeners.fns, fn)
	}
}

// WithSyncListener has every event WithListener reports given to fn on the
// goroutine of the call it comes from, as it happens, after the store's
// lock is released. fn must be quick and must never block: the call waits
// for it. A panic in it is logged and goes no further. It is for a counter
// (a daemon's metrics): handing each event to a goroutine of its own costs
// more than counting it.
func WithSyncListener(fn func(Event)) Option {
	return func(c *Circuits) {
		c.dispatcher().syncFns = append(c.listeners.syncFns, fn)
	}
}

func (c *Circuits) dispatcher() *dispatcher {
	if c.listeners == nil {
		c.listeners = &dispatcher{logger: func() *slog.Logger { return c.logger }}
	}
	return c.listeners
}

// defaultPolicy is DefaultPolicy, computed once.
var defaultPolicy = DefaultPolicy()

// New returns Circuits that keep state in store.
func New(store Store, opts ...Option) *Circuits {
	c := &Circuits{
		store:  store,
		policy: func(string) Policy { return defaultPolicy },
		clock:  WallClock{},
		logger: slog.New(slog.DiscardHandler),
		draw:   rand.Float64,
	}
	for _, o := range opts {
		o(c)
	}
	_, c.wall = c.clock.(WallClock)
	c.budgets, _ = store.(BudgetStore)
	c.quiet = c.logger.Handler() == slog.DiscardHandler
	return c
}

// now reads the time for an attempt: the time its deadlines count from, and
// the breaker's instant, from one clock read when the clock is WallClock.
func (c *Circuits) now() (time.Time, Instant) {
	t := time.Now()
	if c.wall {
		return t, Instant{Wall: t}
	}
	return t, c.clock.Now()
}

// since is the breaker's instant now, for an attempt begun at start (as now
// gave it). With WallClock it adds the monotonic time elapsed to start: that
// clock is cheaper to read than the wall clock.
func (c *Circuits) since(start Instant) Instant {
	if c.wall {
		return Instant{Wall: start.Wall.Add(time.Since(start.Wall))}
	}
	return c.clock.Now()
}

// Store returns the store the circuits are kept in.
func (c *Circuits) Store() Store { return c.store }

// Clock returns the clock the circuits are timed by.
func (c *Circuits) Clock() Clock { return c.clock }

// Policy returns the policy of the named circuit.
func (c *Circuits) Policy(name string) Policy { return c.policy(name) }

// Flush waits until every event reported so far has reached the listeners,
// or ctx ends. A short-lived process calls it before it exits, once its
// output is written, so that a notification is not lost.
func (c *Circuits) Flush(ctx context.Context) error {
	if c.listeners == nil {
		return nil
	}
	return c.listeners.flush(ctx)
}

// Trip forces the named circuit open, for d or (d == 0) until Reset: every
// call skips it meanwhile. It returns the circuit's view afterwards.
func (c *Circuits) Trip(ctx context.Context, name string, d time.Duration) (View, error) {
	return c.TripBy(ctx, name, d, ByHand)
}

// TripBy is Trip, the event recording by whom (State.TripBy).
func (c *Circuits) TripBy(ctx context.Context, name string, d time.Duration, by string) (View, error) {
	if d < 0 {
		return View{}, fmt.Errorf("trip %s: negative duration %s", name, d)
	}
	return c.force(ctx, name, func(st *State, now Instant) []Event { return st.TripBy(now, d, by) })
}

// Reset closes the named circuit and forgets its failures; its counts are
// kept. It returns the circuit's view afterwards.
func (c *Circuits) Reset(ctx context.Context, name string) (View, error) {
	return c.ResetBy(ctx, name, ByHand)
}

// ResetBy is Reset, the event recording by whom (State.ResetBy).
func (c *Circuits) ResetBy(ctx context.Context, name, by string) (View, error) {
	return c.force(ctx, name, func(st *State, now Instant) []Event { return st.ResetBy(now, by) })
}

func (c *Circuits) force(ctx context.Context, name string, apply func(*State, Instant) []Event) (View, error) {
	if err := ValidateName(name); err != nil {
		return View{}, err
	}
	var now Instant
	var events []Event
	skips := skipTotal(ctx, c.store, name)
	st, err := c.store.Update(ctx, name, func(st *State) ([]Event, bool) {
		now = c.clock.Now()
		events = apply(st, now)
		StampSkips(events, skips)
		return events, true
	})
	if err != nil {
		return View{}, fmt.Errorf("update %s: %w", name, err)
	}
	k := &call{c: c, name: name, byHand: true}
	k.logEvents(events)
	return st.View(now), nil
}

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

// Probe runs fn once as a health check of the named circuit. It is Do with
// one attempt, except that an open circuit need not have reached the end of
// its open period: Probe takes a probe lease at once (State.AcquireHealth),
// shared with every process's probes, and fn's success closes the circuit
// while its failure leaves the open period as it was. A circuit forced open,
// or one whose probe lease another caller holds, returns an error matching
// ErrOpen without running fn; no skip is counted for it.
func (c *Circuits) Probe(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	p := c.policy(name)
	p.Retry.Attempts = 1
	k := &call{c: c, name: name, policy: p, health: true}
	return k.run(ctx, fn)
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
	now := c.clock.Now()
	if _, err := st.Decide(now); err != nil && err != errNeedLock {
		k := &call{c: c, name: name}
		k.skip(ctx, err, now.Wall)
		return err
	}
	return nil
}

// call is the state of one Do.
type call struct {
	c        *Circuits
	name     string
	policy   Policy
	broken   bool // the store failed: run unprotected, warn once
	reopened bool // a probe of this call failed and opened the circuit again
	opened   bool // a failure of this call opened the circuit (or opened it again)
	open     bool // the circuit was open after this call's last counted failure, or refused its retry
	byHand   bool // Trip or Reset: their caller tells the person, not the log
	health   bool // Probe: a health check, which may probe an open circuit
	noBudget bool // the budget store failed: retry without the budget, warn once
}

func (k *call) run(parent context.Context, fn func(context.Context) error) error {
	err := k.attempts(parent, fn)
	if k.reopened || k.open && !k.opened { // declared here, ee costs a successful call nothing
		var ee *ExhaustedError
		if errors.As(err, &ee) {
			ee.Reopened = k.reopened
			ee.Overtaken = k.open && !k.opened
		}
	}
	return err
}

func (k *call) attempts(parent context.Context, fn func(context.Context) error) error {
	r := k.policy.Retry
	// One context per attempt, none for the call: the call's deadline is a
	// time that caps each attempt's, which keeps a successful Do cheap.
	// One clock read (Circuits.now) serves the first attempt's deadlines and
	// its breaker decision; a healthy call adds one monotonic read for the
	// time of its success.
	now, instant := k.c.now()
	deadline, callersDeadline := now.Add(r.Deadline), false
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline, callersDeadline = d, true
	}
	stopDeadline := StopDeadline
	if callersDeadline {
		stopDeadline = StopCallersDeadline
	}
	var last error
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			now, instant = k.c.now()
		}
		if parent.Err() != nil || !now.Before(deadline) { // a caller's deadline may be gone already
			return k.stopped(parent, attempt-1, stopDeadline, last)
		}
		if attempt > 1 && r.Budget != nil {
			// Asked before the breaker: a refused retry takes no probe
			// lease and records nothing against the circuit.
			if be := k.spendBudget(parent, now, true); be != nil {
				k.info("retry budget exhausted; giving up", "retries", be.Retries, "first_attempts", be.Firsts)
				return &ExhaustedError{Name: k.name, Attempts: attempt - 1, Stop: StopBudget, Budget: be, Err: last}
			}
		}
		permit, err := k.acquire(parent, deadline, instant)
		if err != nil && !isOpen(err) {
			return k.stopped(parent, attempt-1, stopDeadline, last)
		}
		if err != nil {
			if attempt == 1 {
				if !k.health { // a health check refused is no caller's skip
					k.skip(parent, err, instant.Wall)
				}
				return err
			}
			k.open = true
			k.info("circuit opened while waiting to retry; giving up", "reopens_in", reopensIn(err))
			return &ExhaustedError{Name: k.name, Attempts: attempt - 1, Stop: StopOpened, Err: last}
		}
		if permit.Lease != "" {
			k.info("probing half-open circuit", "attempt", attempt)
		}
		if attempt == 1 && r.Budget != nil && !k.health {
			k.spendBudget(parent, now, false) // a first attempt is never refused
		}

		attemptDeadline := now.Add(r.Timeout)
		cutByDeadline := !attemptDeadline.Before(deadline)
		if cutByDeadline {
			attemptDeadline = deadline
		}
		actx, cancel := context.WithDeadline(parent, attemptDeadline)
		err = fn(actx)
		timedOut := err != nil && actx.Err() == context.DeadlineExceeded
		cancel()

		if err != nil && parent.Err() == context.Canceled {
			k.record(parent, permit, Outcome{Neutral: true, Attempt: attempt})
			return fmt.Errorf("%s: %w", k.name, parent.Err())
		}
		if err == nil {
			if attempt > 1 || permit.Lease != "" {
				k.info("attempt succeeded", "attempt", attempt)
			} else {
				k.debug("attempt succeeded", "attempt", attempt)
			}
			k.recordSuccess(parent, permit, instant, attempt)
			return nil
		}

		var f *Failure
		if !errors.As(err, &f) {
			f = &Failure{Err: err}
		}
		ae := &AttemptError{Attempt: attempt, Reason: f.Error(), Err: err}
		switch {
		case timedOut && cutByDeadline && !callersDeadline:
			ae.Cut, ae.Limit = CutDeadline, r.Deadline
		case timedOut && cutByDeadline:
			ae.Cut = CutCallersDeadline
		case timedOut:
			ae.Cut, ae.Limit = CutTimeout, r.Timeout
		}
		reason := ae.Error()
		k.info("attempt failed", "attempt", attempt, "attempts", r.Attempts, "reason", reason)
		reopensIn, opened := k.record(parent, permit, Outcome{Failed: true, Neutral: f.Neutral || f.Local, Attempt: attempt, Reason: reason, TimedOut: timedOut, Cause: cause(f, ae), OpenFor: f.OpenFor})
		k.reopened = k.reopened || opened && permit.Lease != ""
		k.open = opened && !f.Neutral && !f.Local
		last = ae

		var stop Stop
		switch {
		case f.Permanent:
			stop = StopPermanent
		case attempt >= r.Attempts:
			stop = StopAttempts
		case !time.Now().Before(deadline):
			stop = stopDeadline
		}
		if stop != 0 {
			return &ExhaustedError{Name: k.name, Attempts: attempt, Stop: stop, Err: last}
		}
		wait, ok := r.Wait(attempt, prev, k.c.draw(), f.RetryAfter, time.Until(deadline))
		if !ok {
			if f.RetryAfter > 0 {
				return &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopRetryAfter, RetryAfter: f.RetryAfter, Err: last}
			}
			return &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopTooClose, Err: last}
		}
		if opened && reopensIn > wait {
			// Opened by this very failure, or while it ran: the next attempt
			// would be refused, so waiting for it would be for nothing.
			return &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopOpened, Err: last}
		}
		k.info("waiting before retry", "wait", roundDuration(wait))
		if !sleep(parent, wait) {
			return k.stopped(parent, attempt, stopDeadline, last)
		}
		prev = wait
	}
}

// spendBudget asks the circuit's retry budget for an attempt at now: nil
// when it may run (always, for a first attempt), else the refusal. A store
// without budgets, or one that fails, lets every attempt run (warned once).
func (k *call) spendBudget(ctx context.Context, now time.Time, retry bool) *BudgetError {
	if k.noBudget || k.c.budgets == nil || k.broken {
		return nil
	}
	b := *k.policy.Retry.Budget
	spend, err := k.c.budgets.SpendBudget(ctx, k.name, b, now, retry)
	if err != nil {
		if ctx.Err() == nil {
			k.error("retry budget unusable; retrying without it", "err", err)
		}
		k.noBudget = true
		return nil
	}
	if spend.Allowed {
		return nil
	}
	return &BudgetError{Firsts: spend.Firsts, Retries: spend.Retries, Window: b.Window}
}

// LevelNotice is the level of a circuit closing: good news, worth one line
// where a logger shows warnings, below them (journald's "notice").
const LevelNotice = slog.LevelInfo + 2

// The levels Do logs at, so that a logger at LevelNotice (the CLI's default)
// prints only what a person must hear about, once:
//   - Error: fusebox's own trouble (a state store it cannot use).
//   - Warn: a transition to open, logged by the one call that caused it (a
//     failed probe that opens it again is Info: the outage goes on).
//   - Notice: a circuit closed, by the call whose success closed it.
//   - Info: Trip's and Reset's transitions (their caller says what it did).
//   - Info: every failed attempt, wait, probe and skip.
//   - Debug: a success at the first attempt.
//
// Do never logs a call's final failure above Info: one call may be one
// endpoint of a chain that another answers. The caller that knows the call
// as a whole logs its end.
func (k *call) error(msg string, args ...any)  { k.logAt(slog.LevelError, msg, args) }
func (k *call) warn(msg string, args ...any)   { k.logAt(slog.LevelWarn, msg, args) }
func (k *call) notice(msg string, args ...any) { k.logAt(LevelNotice, msg, args) }
func (k *call) info(msg string, args ...any)   { k.logAt(slog.LevelInfo, msg, args) }
func (k *call) debug(msg string, args ...any)  { k.logAt(slog.LevelDebug, msg, args) }

// logAt checks the level first so that a quiet call allocates nothing for
// its log.

func (k *call) logAt(level slog.Level, msg string, args []any) {
	ctx := context.Background()
	if !k.c.quiet && k.c.logger.Enabled(ctx, level) {
		k.c.logger.Log(ctx, level, msg, append([]any{"circuit", k.name}, args...)...)
	}
}

// stopped is Do's result when its context ended between attempts: the
// caller's cancellation, or a deadline.
func (k *call) stopped(parent context.Context, attempts int, stop Stop, last error) error {
	if parent.Err() == context.Canceled {
		return fmt.Errorf("%s: %w", k.name, parent.Err())
	}
	if last == nil {
		last = context.DeadlineExceeded
	}
	return &ExhaustedError{Name: k.name, Attempts: attempts, Stop: stop, Err: last}
}

// acquire asks the breaker whether an attempt may run: lock-free for a closed
// or open circuit, under the store's lock when a probe lease is at stake.
func (k *call) acquire(ctx context.Context, deadline time.Time, now Instant) (Permit, error) {
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
	if permit, err := st.Decide(now); err != errNeedLock && !(k.health && openByBreaker(err)) {
		return permit, err
	}
	return k.acquireLocked(ctx, deadline)
}

// acquireLocked is acquire's decision under the store's lock. It is a
// function of its own so that the variables its Update closure captures are
// not allocated on acquire's lock-free path.
func (k *call) acquireLocked(ctx context.Context, deadline time.Time) (Permit, error) {
	s := k.c.store
	ctx, cancel := context.WithDeadline(ctx, deadline) // a lock wait ends with the call
	defer cancel()
	leaseID := strconv.FormatUint(rand.Uint64(), 36)
	var permit Permit
	var aerr error
	var events []Event
	clock, bp, health := k.c.clock, k.policy.Breaker, k.health // not k: a closure holding k would move every call to the heap
	_, err := s.Update(ctx, k.name, func(st *State) ([]Event, bool) {
		before := *st
		before.Probes = slices.Clone(st.Probes) // Acquire rebases leases in place
		if health {
			permit, events, aerr = st.AcquireHealth(bp, clock.Now(), leaseID)
		} else {
			permit, events, aerr = st.Acquire(bp, clock.Now(), leaseID)
		}
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

// cause is the kind of a failed attempt: a timeout when its timeout or a
// deadline cut it, else what its failure says.
func cause(f *Failure, ae *AttemptError) Cause {
	switch {
	case ae.Cut != NotCut:
		return CauseTimeout
	case f.Cause != "":
		return f.Cause
	}
	return CauseOther
}

// openByBreaker reports whether err is an open circuit that a health check
// may probe: open by the breaker, not forced open by hand.
func openByBreaker(err error) bool {
	oe, ok := err.(*OpenError)
	return ok && oe.Phase == Open
}

func sameAnchors(a, b *State) bool {
	return a.OpenedAt == b.OpenedAt && slices.Equal(a.Probes, b.Probes) // a rebased lease must be kept
}

// recordSuccess records an attempt, begun at start, that succeeded. A
// success that changes nothing but the counters (State.QuietSuccess) is only
// counted: no lock, no write of the State. It records even when parent is
// done (the outcome happened), with parent's values.
func (k *call) recordSuccess(parent context.Context, permit Permit, start Instant, attempt int) {
	if k.broken || permit.Unprotected {
		return
	}
	ctx := detached(parent)
	counts := Counts{Successes: 1, LastSuccess: k.c.since(start).Wall}
	st, err := k.c.store.Load(ctx, k.name)
	if err == nil && st.QuietSuccess(k.policy.Breaker, permit) {
		k.count(ctx, counts)
		k.emit(Event{Time: counts.LastSuccess, Circuit: k.name, Kind: EventSuccess, Attempt: attempt})
		return
	}
	k.update(ctx, permit, Outcome{Attempt: attempt}, counts)
}

// record stores a failed or cancelled attempt's outcome and reports whether
// the circuit is now open, and for how long. It records even when parent
// is done (the outcome happened), with parent's values.
func (k *call) record(parent context.Context, permit Permit, o Outcome) (reopensIn time.Duration, opened bool) {
	if k.broken || permit.Unprotected {
		return 0, false
	}
	ctx := detached(parent)
	switch {
	case !o.Failed && permit.Lease == "":
		return 0, false // a cancelled ordinary attempt changes nothing
	case o.Failed && !o.Neutral:
		// Counted before the event is logged: a process killed in between
		// leaves a count without its event, never an event without a count.
		k.count(ctx, Counts{Failures: 1})
	}
	return k.update(ctx, permit, o, Counts{})
}

// detached is parent without its cancellation, for recording an outcome
// that happened whether or not the caller has gone since: its values stay.
// A parent that can never be cancelled is its own (without an allocation).
func detached(parent context.Context) context.Context {
	if parent.Done() == nil {
		return parent
	}
	return context.WithoutCancel(parent)
}

// update records o in the State under the store's lock; a success's counts
// are added once the State is stored.
func (k *call) update(ctx context.Context, permit Permit, o Outcome, success Counts) (reopensIn time.Duration, opened bool) {
	s := k.c.store
	var skips uint64
	if !o.Neutral || permit.Lease != "" { // it may open or close the circuit
		skips = skipTotal(ctx, s, k.name)
	}
	var events []Event
	var now Instant
	clock, bp, retry := k.c.clock, k.policy.Breaker, k.policy.Retry // not k: see acquireLocked
	st, err := s.Update(ctx, k.name, func(st *State) ([]Event, bool) {
		now = clock.Now()
		events = st.Record(bp, now, permit, o)
		StampSkips(events, skips)
		StampRetry(events, retry)
		return events, true
	})
	if err != nil {
		k.storeFailed(err)
		return 0, false
	}
	if !o.Failed && !o.Neutral { // not a cancelled probe, which gave its lease back
		k.count(ctx, success)
		k.emit(Event{Time: now.Wall, Circuit: k.name, Kind: EventSuccess, Attempt: o.Attempt})
	}
	for _, e := range events {
		k.opened = k.opened || e.Kind == EventTransition && e.To == Open
	}
	k.logEvents(events)
	v := st.View(now)
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

// skipTotal reads the circuit's skip count for StampSkips; 0 when it cannot
// be read (the Update that follows reports a broken store).
func skipTotal(ctx context.Context, s Store, name string) uint64 {
	c, err := s.Counts(ctx, name)
	if err != nil {
		return 0
	}
	return c.Skips
}

func (k *call) count(ctx context.Context, c Counts) {
	if err := k.c.store.Count(ctx, k.name, c); err != nil {
		k.storeFailed(err)
	}
}

// skipLevel is the level a skip is logged at.
const skipLevel = slog.LevelInfo // exit 75 says it; -v shows it

// skip counts and logs a call refused at now by an open circuit.
func (k *call) skip(ctx context.Context, err error, now time.Time) {
	if !k.c.quiet && k.c.logger.Enabled(ctx, skipLevel) { // the message is built only when it is logged
		if d := reopensIn(err); d > 0 {
			k.logAt(skipLevel, "skipped: "+err.Error(), []any{"reopens_in", d})
		} else {
			k.logAt(skipLevel, "skipped: "+err.Error(), nil)
		}
	}
	k.count(ctx, Counts{Skips: 1})
	if k.c.listeners != nil {
		k.emit(Event{Time: now, Circuit: k.name, Kind: EventSkip, Reason: err.Error()})
	}
}

func (k *call) storeFailed(err error) {
	if !k.broken {
		k.error("state store unusable; running without circuit protection", "err", err)
	}
	k.broken = true
}

// emit hands e to the listeners, if any.
func (k *call) emit(e Event) {
	if k.c.listeners != nil {
		k.c.listeners.emit(e)
	}
}

// logEvents logs the transitions among events and hands every event to the
// listeners. It runs after the store's lock is released.
func (k *call) logEvents(events []Event) {
	for _, e := range events {
		if e.Kind == EventTransition { // logged first: what a listener logs comes after
			k.logTransition(e)
		}
		k.emit(e)
	}
}

// logTransition logs a transition at the level the logging contract gives
// it: an opening warns, a closing is a notice, a failed probe's reopening
// and a trip or reset by hand (whose command says what it did) are info.
func (k *call) logTransition(e Event) {
	if k.byHand {
		k.info("circuit "+strings.ReplaceAll(string(e.To), "_", " "), "reason", e.Reason)
		return
	}
	switch e.To {
	case Open:
		if e.From == HalfOpen { // a failed probe: the opening was told already
			k.info("circuit reopened", "for", roundDuration(time.Duration(e.For)), "reason", e.Reason)
		} else {
			k.warn("circuit opened", "for", roundDuration(time.Duration(e.For)), "reason", e.Reason)
		}
	case Closed:
		k.notice("circuit closed", "reason", e.Reason)
	}
}

// isOpen is errors.Is(err, ErrOpen), without the walk for the error Decide
// and Acquire return.
func isOpen(err error) bool {
	if _, ok := err.(*OpenError); ok {
		return true
	}
	return errors.Is(err, ErrOpen)
}

func reopensIn(err error) time.Duration {
	if oe, ok := err.(*OpenError); ok { // as Decide and Acquire return it
		return roundDuration(oe.ReopensIn)
	}
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
