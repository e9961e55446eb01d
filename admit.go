package fusebox

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// Admission: whether an attempt may run, asked of the retry budget and then
// of the breaker.

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
			return breaker.Permit{}, &ExhaustedError{Name: k.name, Attempts: attempt - 1, Stop: StopBudget, Budget: be, Err: last}
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
		return breaker.Permit{}, &ExhaustedError{Name: k.name, Attempts: attempt - 1, Stop: StopOpened, Err: last}
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
	if permit, err := st.Decide(now); !bounded && err != breaker.ErrNeedLock && !(k.health && openByBreaker(err)) {
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
		if health {
			permit, events, aerr = st.AcquireHealth(bp, clock.Now(), leaseID)
		} else {
			permit, events, aerr = st.Acquire(bp, clock.Now(), leaseID)
		}
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
