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

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// Do calls fn under the named circuit's policy: each attempt asks the breaker
// first, runs with the attempt timeout, and records its outcome; failures are
// retried with backoff within the deadline. An attempt whose deadline ctx
// already sets (or that has none) runs with ctx itself, at no cost.
//
// Do returns nil when an attempt succeeded; an error matching
// breaker.ErrOpen when the circuit was open and fn never ran; an
// *ExhaustedError wrapping the last attempt's error when the call failed;
// and ctx's error when ctx was cancelled, which counts as neither success
// nor failure.
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
// its open period: Probe takes a probe lease at once,
// shared with every process's probes, and fn's success closes the circuit
// while its failure leaves the open period as it was. A circuit forced open,
// or one whose probe lease another caller holds, returns an error matching
// breaker.ErrOpen without running fn; no skip is counted for it.
func (c *Circuits) Probe(ctx context.Context, name string, fn func(ctx context.Context) error) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	p := c.policy(name)
	p.Retry.Attempts = 1
	k := &call{c: c, name: name, policy: p, health: true}
	return k.run(ctx, fn)
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

	// The call's deadline: a time that caps each attempt's, so that the
	// call itself needs no context of its own.
	deadline        time.Time
	callersDeadline bool // deadline is the caller's, sooner than the policy's
	noDeadline      bool // neither the policy (NoDeadline) nor the caller sets one
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

// attempts runs fn until an attempt succeeds or the call stops. Each turn is
// four steps: admit (the retry budget, then the breaker), attempt (fn under
// its deadline), record (the outcome, in the circuit), and decide (stop, or
// wait and retry).
func (k *call) attempts(parent context.Context, fn func(context.Context) error) error {
	// One clock read (Circuits.now) serves the first attempt's deadlines and
	// its breaker decision; a healthy call adds one monotonic read for the
	// time of its success.
	now, instant := k.c.now()
	k.setDeadline(parent, now)
	var last error
	var prev time.Duration
	for attempt := 1; ; attempt++ {
		if attempt > 1 {
			now, instant = k.c.now()
		}
		permit, err := k.admit(parent, attempt, now, instant, last)
		if err != nil {
			return err
		}
		cut, err := k.attempt(parent, fn, now)
		if err == nil {
			k.recordSuccess(parent, permit, instant, attempt)
			return nil
		}
		if parent.Err() == context.Canceled {
			k.record(parent, permit, breaker.Outcome{Neutral: true, Attempt: attempt})
			return fmt.Errorf("%s: %w", k.name, parent.Err())
		}
		f, ae := k.failure(err, cut, attempt)
		last = ae
		reopensIn, opened := k.recordFailure(parent, permit, f, ae)
		wait, err := k.decide(attempt, prev, f, reopensIn, opened, last)
		if err != nil {
			return err
		}
		k.info("waiting before retry", "wait", human.Round(wait))
		if !sleep(parent, wait) {
			return k.stopped(parent, attempt, last)
		}
		prev = wait
	}
}

// setDeadline fixes the call's deadline at its start: the policy's, or the
// caller's when that comes first.
func (k *call) setDeadline(parent context.Context, now time.Time) {
	r := k.policy.Retry
	k.deadline = now.Add(r.Deadline)
	if d, ok := parent.Deadline(); ok && d.Before(k.deadline) {
		k.deadline, k.callersDeadline = d, true
	}
	k.noDeadline = r.Deadline == NoDeadline && !k.callersDeadline
}

// deadlineStop is the stopReason of a call that reached its deadline.
func (k *call) deadlineStop() stopReason {
	if k.callersDeadline {
		return stopCallersDeadline
	}
	return stopDeadline
}

// attempt runs fn once, under the attempt's deadline: its timeout, or the
// call's deadline when that comes first. It reports which of them cut fn
// short, if one did. When parent carries the attempt's deadline already (the
// caller's), or there is none, fn runs with parent itself: an attempt's
// context of its own is the only allocation of a successful call.
func (k *call) attempt(parent context.Context, fn func(context.Context) error, now time.Time) (attemptCut, error) {
	r := k.policy.Retry
	deadline := now.Add(r.Timeout)
	byCall := !deadline.Before(k.deadline)
	ctx := parent
	if !byCall || !k.callersDeadline && !k.noDeadline {
		if byCall {
			deadline = k.deadline
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(parent, deadline)
		defer cancel()
	}
	err := fn(ctx)
	switch {
	case err == nil || ctx.Err() != context.DeadlineExceeded:
		return notCut, err
	case byCall && k.callersDeadline:
		return cutCallersDeadline, err
	case byCall:
		return cutDeadline, err
	}
	return cutTimeout, err
}

// failure reads a failed attempt's error: the *Failure that steers the
// retry, and the *attemptError the call reports.
func (k *call) failure(err error, cut attemptCut, attempt int) (*Failure, *attemptError) {
	var f *Failure
	if !errors.As(err, &f) {
		f = &Failure{Err: err}
	}
	ae := &attemptError{Attempt: attempt, Reason: f.Error(), Err: err, cut: cut}
	switch cut {
	case cutDeadline:
		ae.Limit = k.policy.Retry.Deadline
	case cutTimeout:
		ae.Limit = k.policy.Retry.Timeout
	}
	return f, ae
}

// decide follows a failed attempt: the wait before the next one, or the
// error Do returns when the call stops here. opened and reopensIn say
// whether the circuit is open now, and for how long.
func (k *call) decide(attempt int, prev time.Duration, f *Failure, reopensIn time.Duration, opened bool, last error) (time.Duration, error) {
	r := k.policy.Retry
	var stop stopReason
	switch {
	case f.Permanent:
		stop = stopPermanent
	case attempt >= r.Attempts:
		stop = stopAttempts
	case !time.Now().Before(k.deadline):
		stop = k.deadlineStop()
	}
	if stop != 0 {
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, stop: stop, Err: last}
	}
	wait, ok := r.wait(attempt, prev, rand.Float64(), f.RetryAfter, time.Until(k.deadline))
	switch {
	case !ok && f.RetryAfter > 0:
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, stop: stopRetryAfter, RetryAfter: f.RetryAfter, Err: last}
	case !ok:
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, stop: stopTooClose, Err: last}
	case opened && reopensIn > wait:
		// Opened by this very failure, or while it ran: the next attempt
		// would be refused, so waiting for it would be for nothing.
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, stop: stopOpened, Err: last}
	}
	return wait, nil
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
	return &ExhaustedError{Name: k.name, Attempts: attempts, stop: k.deadlineStop(), Err: last}
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

// admit asks whether attempt may run at now: the call's context and
// deadline, then (for a retry) the retry budget, then the breaker. It returns
// the breaker's permit, or the error Do returns when the attempt may not run.
func (k *call) admit(parent context.Context, attempt int, now time.Time, instant breaker.Instant, last error) (breaker.Permit, error) {
	r := k.policy.Retry
	if parent.Err() != nil || !now.Before(k.deadline) { // a caller's deadline may be gone already
		return breaker.Permit{}, k.stopped(parent, attempt-1, last)
	}
	if attempt > 1 && r.Budget != nil {
		// Asked before the breaker: a refused retry takes no probe
		// lease and records nothing against the circuit.
		if be := k.spendBudget(parent, now, true); be != nil {
			k.info("retry budget exhausted; giving up", "retries", be.Retries, "first_attempts", be.Firsts)
			return breaker.Permit{}, &ExhaustedError{Name: k.name, Attempts: attempt - 1, stop: stopBudget, Budget: be, Err: last}
		}
	}
	permit, err := k.acquire(parent, k.deadline, instant)
	switch {
	case err != nil && !isOpen(err):
		return breaker.Permit{}, k.stopped(parent, attempt-1, last)
	case err != nil && attempt == 1:
		if !k.health { // a health check refused is no caller's skip
			k.skip(parent, err, instant.Wall)
		}
		return breaker.Permit{}, err
	case err != nil:
		k.open = true
		k.info("circuit opened while waiting to retry; giving up", "reopens_in", reopensIn(err))
		return breaker.Permit{}, &ExhaustedError{Name: k.name, Attempts: attempt - 1, stop: stopOpened, Err: last}
	}
	if permit.Lease != "" {
		k.info("probing half-open circuit", "attempt", attempt)
	}
	if attempt == 1 && r.Budget != nil && !k.health {
		k.spendBudget(parent, now, false) // a first attempt is never refused
	}
	return permit, nil
}

// spendBudget asks the circuit's retry budget for an attempt at now: nil
// when it may run (always, for a first attempt), else the refusal. A store
// without budgets, or one that fails, lets every attempt run (warned once).
func (k *call) spendBudget(ctx context.Context, now time.Time, retry bool) *budgetError {
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
	return &budgetError{Firsts: spend.Firsts, Retries: spend.Retries, Window: b.Window}
}

// acquire asks the breaker whether an attempt may run: lock-free for a closed
// or open circuit, under the store's lock when a probe lease is at stake.
func (k *call) acquire(ctx context.Context, deadline time.Time, now breaker.Instant) (breaker.Permit, error) {
	if k.broken {
		return breaker.Permit{Unprotected: true}, nil
	}
	s := k.c.store
	st, err := s.Load(ctx, k.name)
	if err != nil && ctx.Err() != nil {
		return breaker.Permit{}, ctx.Err()
	}
	if err != nil {
		k.storeFailed(err)
		return breaker.Permit{Unprotected: true}, nil
	}
	// A period another writer stored past our open_max is bounded, and the
	// bound stored under the lock, so that status shows it too.
	bounded := st.BoundOpen(k.policy.Breaker)
	if permit, err := st.Decide(now); !bounded && (err == nil || errors.Is(err, breaker.ErrOpen)) && !(k.health && openByBreaker(err)) {
		return permit, err
	}
	return k.acquireLocked(ctx, deadline)
}

// acquireLocked is acquire's decision under the store's lock. It is a
// function of its own so that the variables its Update closure captures are
// not allocated on acquire's lock-free path.
func (k *call) acquireLocked(ctx context.Context, deadline time.Time) (breaker.Permit, error) {
	s := k.c.store
	ctx, cancel := context.WithDeadline(ctx, deadline) // a lock wait ends with the call
	defer cancel()
	leaseID := strconv.FormatUint(rand.Uint64(), 36)
	var permit breaker.Permit
	var aerr error
	var events []breaker.Event
	clock, bp, health := k.c.clock, k.policy.Breaker, k.health // not k: a closure holding k would move every call to the heap
	_, err := s.Update(ctx, k.name, func(st *breaker.State) ([]breaker.Event, bool) {
		before := *st
		before.Probes = slices.Clone(st.Probes) // Acquire rebases leases in place
		permit, events, aerr = st.Acquire(bp, clock.Now(), leaseID, health)
		return events, len(events) > 0 || permit.Lease != "" || !sameAnchors(&before, st)
	})
	if err != nil && ctx.Err() != nil {
		return breaker.Permit{}, ctx.Err()
	}
	if err != nil {
		k.storeFailed(err)
		return breaker.Permit{Unprotected: true}, nil
	}
	k.logEvents(events)
	return permit, aerr
}

// openByBreaker reports whether err is an open circuit that a health check
// may probe: open by the breaker, not forced open by hand.
func openByBreaker(err error) bool {
	oe, ok := err.(*breaker.OpenError)
	return ok && oe.Phase == breaker.Open
}

func sameAnchors(a, b *breaker.State) bool {
	return a.OpenedAt == b.OpenedAt && a.OpenPeriod == b.OpenPeriod && // a bounded period is stored
		slices.Equal(a.Probes, b.Probes) // a rebased lease must be kept
}

// isOpen is errors.Is(err, breaker.ErrOpen), without the walk for the
// error Decide and Acquire return.
func isOpen(err error) bool {
	if _, ok := err.(*breaker.OpenError); ok {
		return true
	}
	return errors.Is(err, breaker.ErrOpen)
}

func reopensIn(err error) time.Duration {
	if oe, ok := err.(*breaker.OpenError); ok { // as Decide and Acquire return it
		return human.Round(oe.ReopensIn)
	}
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		return human.Round(oe.ReopensIn)
	}
	return 0
}

// recordSuccess logs and records an attempt, begun at start, that succeeded. A
// success that changes nothing but the counters (State.quietSuccess) is only
// counted: no lock, no write of the State. It records even when parent is
// done (the outcome happened), with parent's values.
func (k *call) recordSuccess(parent context.Context, permit breaker.Permit, start breaker.Instant, attempt int) {
	if attempt > 1 || permit.Lease != "" {
		k.info("attempt succeeded", "attempt", attempt)
	} else {
		k.debug("attempt succeeded", "attempt", attempt)
	}
	if k.broken || permit.Unprotected {
		return
	}
	ctx := detached(parent)
	counts := Counts{Successes: 1, LastSuccess: k.c.since(start).Wall}
	st, err := k.c.store.Load(ctx, k.name)
	if err == nil && st.QuietSuccess(k.policy.Breaker, permit) {
		k.count(ctx, counts)
		k.emit(breaker.Event{Time: counts.LastSuccess, Circuit: k.name, Kind: breaker.EventSuccess, Attempt: attempt})
		return
	}
	k.update(ctx, permit, breaker.Outcome{Attempt: attempt}, counts)
}

// recordFailure logs and records a failed attempt, and reports whether the
// circuit is now open, and for how long.
func (k *call) recordFailure(parent context.Context, permit breaker.Permit, f *Failure, ae *attemptError) (reopensIn time.Duration, opened bool) {
	reason := ae.Error()
	k.info("attempt failed", "attempt", ae.Attempt, "attempts", k.policy.Retry.Attempts, "reason", reason)
	reopensIn, opened = k.record(parent, permit, breaker.Outcome{Failed: true, Neutral: f.Neutral || f.Local, Attempt: ae.Attempt,
		Reason: reason, TimedOut: ae.cut != notCut, Cause: cause(f, ae), OpenFor: f.OpenFor})
	k.reopened = k.reopened || opened && permit.Lease != ""
	k.open = opened && !f.Neutral && !f.Local
	return reopensIn, opened
}

// cause is the kind of a failed attempt: a timeout when its timeout or a
// deadline cut it, else what its failure says.
func cause(f *Failure, ae *attemptError) breaker.Cause {
	switch {
	case ae.cut != notCut:
		return breaker.CauseTimeout
	case f.Cause != "":
		return f.Cause
	}
	return breaker.CauseOther
}

// record stores a failed or cancelled attempt's outcome and reports whether
// the circuit is now open, and for how long. It records even when parent
// is done (the outcome happened), with parent's values.
func (k *call) record(parent context.Context, permit breaker.Permit, o breaker.Outcome) (reopensIn time.Duration, opened bool) {
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
// are added once the State is stored, or when the store was only busy.
func (k *call) update(ctx context.Context, permit breaker.Permit, o breaker.Outcome, success Counts) (reopensIn time.Duration, opened bool) {
	s := k.c.store
	var skips uint64
	if !o.Neutral || permit.Lease != "" { // it may open or close the circuit
		skips = skipTotal(ctx, s, k.name)
	}
	var events []breaker.Event
	var now breaker.Instant
	clock, bp, retry := k.c.clock, k.policy.Breaker, recordRetry(k.policy.Retry) // not k: see acquireLocked
	st, err := s.Update(ctx, k.name, func(st *breaker.State) ([]breaker.Event, bool) {
		now = clock.Now()
		events = st.Record(bp, now, permit, o)
		stamp(events, skips, retry)
		return events, true
	})
	if err != nil {
		if errors.Is(err, ErrLockTimeout) && !o.Failed && !o.Neutral {
			// The store works, only busy: the success happened and is
			// counted, as a failure is counted before the lock is taken
			// (a count without its event, never an event without its count).
			k.count(ctx, success)
		}
		k.storeFailed(err)
		return 0, false
	}
	if !o.Failed && !o.Neutral { // not a cancelled probe, which gave its lease back
		k.count(ctx, success)
		k.emit(breaker.Event{Time: now.Wall, Circuit: k.name, Kind: breaker.EventSuccess, Attempt: o.Attempt})
	}
	for _, e := range events {
		k.opened = k.opened || e.Kind == breaker.EventTransition && e.To == breaker.Open
	}
	k.logEvents(events)
	v := st.View(now)
	switch v.Phase {
	case breaker.Open:
		return v.ReopensIn, true
	case breaker.ForcedOpen:
		if v.ReopensIn == 0 {
			return NoDeadline, true // until reset
		}
		return v.ReopensIn, true
	}
	return 0, false
}

// skipTotal reads the circuit's skip count for stamp; 0 when it cannot
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
		k.emit(breaker.Event{Time: now, Circuit: k.name, Kind: breaker.EventSkip, Reason: err.Error()})
	}
}

func (k *call) storeFailed(err error) {
	if !k.broken {
		k.error("state store unusable; running without circuit protection", "err", err)
	}
	k.broken = true
}

// emit hands e to the listeners, if any.
func (k *call) emit(e breaker.Event) {
	if k.c.listeners != nil {
		k.c.listeners.emit(e)
	}
}

// logEvents logs the transitions among events and hands every event to the
// listeners. It runs after the store's lock is released.
func (k *call) logEvents(events []breaker.Event) {
	for _, e := range events {
		if e.Kind == breaker.EventTransition { // logged first: what a listener logs comes after
			k.logTransition(e)
		}
		k.emit(e)
	}
}

// logTransition logs a transition at the level the logging contract gives
// it: an opening warns, a closing is a notice, a failed probe's reopening
// and a trip or reset by hand (whose command says what it did) are info.
func (k *call) logTransition(e breaker.Event) {
	if k.byHand {
		k.info("circuit "+strings.ReplaceAll(string(e.To), "_", " "), "reason", e.Reason)
		return
	}
	switch e.To {
	case breaker.Open:
		if e.From == breaker.HalfOpen { // a failed probe: the opening was told already
			k.info("circuit reopened", "for", human.Round(time.Duration(e.For)), "reason", e.Reason)
		} else {
			k.warn("circuit opened", "for", human.Round(time.Duration(e.For)), "reason", e.Reason)
		}
	case breaker.Closed:
		k.notice("circuit closed", "reason", e.Reason)
	}
}
