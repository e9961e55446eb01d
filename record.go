package fusebox

import (
	"context"
	"errors"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

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
func (k *call) recordFailure(parent context.Context, permit breaker.Permit, f *Failure, ae *AttemptError) (reopensIn time.Duration, opened bool) {
	reason := ae.Error()
	k.info("attempt failed", "attempt", ae.Attempt, "attempts", k.policy.Retry.Attempts, "reason", reason)
	reopensIn, opened = k.record(parent, permit, breaker.Outcome{Failed: true, Neutral: f.Neutral || f.Local, Attempt: ae.Attempt,
		Reason: reason, TimedOut: ae.Cut != NotCut, Cause: cause(f, ae), OpenFor: f.OpenFor})
	k.reopened = k.reopened || opened && permit.Lease != ""
	k.open = opened && !f.Neutral && !f.Local
	return reopensIn, opened
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
	clock, bp, retry := k.c.clock, k.policy.Breaker, k.policy.Retry // not k: see acquireLocked
	st, err := s.Update(ctx, k.name, func(st *breaker.State) ([]breaker.Event, bool) {
		now = clock.Now()
		events = st.Record(bp, now, permit, o)
		breaker.StampSkips(events, skips)
		stampRetry(events, retry)
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

// skipTotal reads the circuit's skip count for stampSkips; 0 when it cannot
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
