package fusebox

import (
	"context"
	"errors"
	"fmt"
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

// deadlineStop is the Stop of a call that reached its deadline.
func (k *call) deadlineStop() Stop {
	if k.callersDeadline {
		return StopCallersDeadline
	}
	return StopDeadline
}

// attempt runs fn once, under the attempt's deadline: its timeout, or the
// call's deadline when that comes first. It reports which of them cut fn
// short, if one did. When parent carries the attempt's deadline already (the
// caller's), or there is none, fn runs with parent itself: an attempt's
// context of its own is the only allocation of a successful call.
func (k *call) attempt(parent context.Context, fn func(context.Context) error, now time.Time) (Cut, error) {
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
		return NotCut, err
	case byCall && k.callersDeadline:
		return CutCallersDeadline, err
	case byCall:
		return CutDeadline, err
	}
	return CutTimeout, err
}

// failure reads a failed attempt's error: the *Failure that steers the
// retry, and the *AttemptError the call reports.
func (k *call) failure(err error, cut Cut, attempt int) (*Failure, *AttemptError) {
	var f *Failure
	if !errors.As(err, &f) {
		f = &Failure{Err: err}
	}
	ae := &AttemptError{Attempt: attempt, Reason: f.Error(), Err: err, Cut: cut}
	switch cut {
	case CutDeadline:
		ae.Limit = k.policy.Retry.Deadline
	case CutTimeout:
		ae.Limit = k.policy.Retry.Timeout
	}
	return f, ae
}

// decide follows a failed attempt: the wait before the next one, or the
// error Do returns when the call stops here. opened and reopensIn say
// whether the circuit is open now, and for how long.
func (k *call) decide(attempt int, prev time.Duration, f *Failure, reopensIn time.Duration, opened bool, last error) (time.Duration, error) {
	r := k.policy.Retry
	var stop Stop
	switch {
	case f.Permanent:
		stop = StopPermanent
	case attempt >= r.Attempts:
		stop = StopAttempts
	case !time.Now().Before(k.deadline):
		stop = k.deadlineStop()
	}
	if stop != 0 {
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, Stop: stop, Err: last}
	}
	wait, ok := r.Wait(attempt, prev, k.c.draw(), f.RetryAfter, time.Until(k.deadline))
	switch {
	case !ok && f.RetryAfter > 0:
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopRetryAfter, RetryAfter: f.RetryAfter, Err: last}
	case !ok:
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopTooClose, Err: last}
	case opened && reopensIn > wait:
		// Opened by this very failure, or while it ran: the next attempt
		// would be refused, so waiting for it would be for nothing.
		return 0, &ExhaustedError{Name: k.name, Attempts: attempt, Stop: StopOpened, Err: last}
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
	return &ExhaustedError{Name: k.name, Attempts: attempts, Stop: k.deadlineStop(), Err: last}
}

// cause is the kind of a failed attempt: a timeout when its timeout or a
// deadline cut it, else what its failure says.
func cause(f *Failure, ae *AttemptError) breaker.Cause {
	switch {
	case ae.Cut != NotCut:
		return breaker.CauseTimeout
	case f.Cause != "":
		return f.Cause
	}
	return breaker.CauseOther
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
