package statestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// The primary's availability is itself a circuit, kept in the local state
// (Local.Health), so that every process on a host shares what one learned:
// a primary that refuses the connection opens it at once, one that is only
// slow (a timeout, which on a busy host says as much about the host) after
// Health.TripAfter timeouts in a row; while it is open, runs go straight to
// the local replica, without waiting on the primary; once the open period
// ends, one process at a time (the probe lease) asks the primary again,
// merges what the host recorded meanwhile, and closes the circuit. Its
// opening is the one warning of an outage on that host, its closing the one
// notice. A process that left the primary while the circuit stayed closed
// leaves a failure on it: the next process that finds the primary answering
// merges what it recorded, and clears the failure.

// healthCircuit names the availability circuit in Local.Health.
const healthCircuit = "primary"

// DefaultHealthPolicy is the availability circuit's: opened by a refused
// connection or by three timeouts in a row, probed after 5s, then after
// 10s, 20s ... up to a minute while the primary stays away; a probe that dies
// frees its lease after 30s.
var DefaultHealthPolicy = breaker.Policy{
	TripAfter: 3, OpenFor: 5 * time.Second, OpenMultiplier: 2, OpenMax: time.Minute,
	Probes: 1, ProbeLease: 30 * time.Second,
}

// lookAgainWhileProbing is how soon a long-running process that found
// another process probing looks at the availability circuit again.
const lookAgainWhileProbing = time.Second

// mergeWait is how long a process that finds the primary answering after
// another process left it waits for the merge lock: a process already
// merging does the work.
const mergeWait = 100 * time.Millisecond

// route is where a Fallback sends its calls.
type route int

const (
	undecided route = iota // the availability circuit is yet to be read
	onPrimary
	onLocal // until lookAgain
)

// decideLocked reads the availability circuit and sets the route; when a
// probe is due and this process wins its lease, it probes the primary first.
func (f *Fallback) decideLocked(ctx context.Context) {
	now := f.o.Clock.Now()
	h := f.healthLocked()
	st, err := h.Load(ctx, healthCircuit)
	if err != nil {
		// The local state cannot say: use the primary, with nothing to record.
		f.route, f.permit = onPrimary, breaker.Permit{Unprotected: true}
		return
	}
	permit, derr := st.Decide(now)
	var oe *breaker.OpenError
	switch {
	case derr == nil:
		f.route, f.permit = onPrimary, permit
		if st.ConsecutiveFailures > 0 {
			f.catchUpLocked(ctx) // a process left the primary: merge what it recorded
		}
		return
	case errors.As(derr, &oe):
		f.toLocalLocked(now, oe.ReopensIn, errors.New(st.LastFailure))
		return
	}
	// Half-open (or its times need rebasing): take the probe lease.
	leaseID := strconv.FormatUint(rand.Uint64(), 36)
	var aerr error
	if _, err := h.Update(ctx, healthCircuit, func(st *breaker.State) ([]breaker.Event, bool) {
		permit, _, aerr = st.Acquire(f.o.Health, f.o.Clock.Now(), leaseID, false)
		return nil, true
	}); err != nil {
		f.route, f.permit = onPrimary, breaker.Permit{Unprotected: true}
		return
	}
	switch {
	case errors.As(aerr, &oe):
		wait := oe.ReopensIn
		if oe.Probing {
			wait = lookAgainWhileProbing
		}
		f.toLocalLocked(now, wait, errors.New(st.LastFailure))
	case aerr != nil:
		f.toLocalLocked(now, lookAgainWhileProbing, aerr)
	case permit.Lease == "":
		f.route, f.permit = onPrimary, permit
	default:
		f.permit = permit
		f.probeLocked(ctx)
	}
}

// awayLocked reports, writing nothing and creating no part of the replica,
// whether the primary is away: this process is on the replica until its
// next look, or the availability circuit is open. A half-open circuit is
// not away: a Peek tries the primary.
func (f *Fallback) awayLocked(ctx context.Context) bool {
	now := f.o.Clock.Now()
	if f.route == onLocal && now.Wall.Before(f.lookAgain) {
		return true
	}
	h := f.memHealth // nil until this process has used its own
	if l, err := f.peekLocalLocked(); err == nil && l.Health != nil {
		h = l.Health
	}
	if h == nil {
		return false
	}
	st, _, err := h.Peek(ctx, healthCircuit)
	if err != nil {
		return false
	}
	_, err = st.Decide(now)
	var oe *breaker.OpenError
	return errors.As(err, &oe)
}

// probeLocked asks the primary whether it is back, holding the availability
// circuit's probe lease: it pings, merges what this host recorded while the
// primary was away, and closes the circuit (one notice); or, failing, opens it
// again for longer.
func (f *Fallback) probeLocked(ctx context.Context) {
	if !f.catchUpLocked(ctx) {
		return
	}
	for _, e := range f.closed {
		if e.Kind == breaker.EventTransition && e.To == breaker.Closed && f.o.Logger != nil {
			f.o.Logger.Log(ctx, fusebox.LevelNotice, "shared state store is back; this host uses it again", "down_for", e.Time.Sub(e.Since).Round(time.Second).String())
		}
	}
}

// catchUpLocked pings the primary and merges into it what this host
// recorded on the replica, then records the success on the availability
// circuit, which closes it after a probe or clears a failure left by a
// process that went to the replica. It reports whether the primary
// answered; when it did not, the process is on the replica.
func (f *Fallback) catchUpLocked(ctx context.Context) bool {
	f.closed = nil
	err := f.ping(ctx)
	merged := false
	if err == nil {
		merged, err = f.mergeLocked(ctx)
	}
	if err != nil && f.outage(ctx, err) {
		f.failedLocked(ctx, err)
		return false
	}
	f.route = onPrimary
	if merged || f.permit.Lease != "" {
		events, st := f.recordLocked(ctx, breaker.Outcome{})
		f.permit, f.closed = breaker.Permit{Generation: st.Generation}, events
	}
	return true
}

// pinger is a primary that can be asked whether it answers (redis.Store).
type pinger interface{ Ping(context.Context) error }

func (f *Fallback) ping(ctx context.Context) error {
	if p, ok := f.primary.(pinger); ok { // f.mu is held
		return p.Ping(ctx)
	}
	_, err := f.primary.Names(ctx)
	return err
}

// failedLocked records that the primary failed with err, warning when that
// opens the availability circuit (the start of an outage on this host), and
// moves this process to the local replica.
func (f *Fallback) failedLocked(ctx context.Context, err error) {
	now := f.o.Clock.Now()
	if f.permit.Unprotected {
		// No availability circuit to share it through: this process warns.
		if f.route != onLocal {
			f.warn(ctx, err)
		}
		f.toLocalLocked(now, f.o.Health.OpenFor, err)
		return
	}
	o := breaker.Outcome{Failed: true, Reason: err.Error()}
	if f.permit.Lease == "" && f.o.Refused(err) {
		o.OpenFor = f.o.Health.OpenFor // not merely slow: open at once
	}
	events, st := f.recordLocked(ctx, o)
	for _, e := range events {
		if e.Kind == breaker.EventTransition && e.To == breaker.Open && e.From == breaker.Closed {
			f.warn(ctx, err)
		}
	}
	v := st.View(now)
	f.toLocalLocked(now, v.ReopensIn, err)
}

func (f *Fallback) warn(ctx context.Context, err error) {
	if f.o.Logger != nil {
		f.o.Logger.WarnContext(ctx, "shared state store unreachable; this host uses its local replica of the shared circuits until it is back", "err", err)
	}
}

// recordLocked records an outcome of the primary on the availability
// circuit, with the permit this process holds.
func (f *Fallback) recordLocked(ctx context.Context, o breaker.Outcome) ([]breaker.Event, breaker.State) {
	var events []breaker.Event
	permit := f.permit
	st, err := f.healthLocked().Update(ctx, healthCircuit, func(st *breaker.State) ([]breaker.Event, bool) {
		events = st.Record(f.o.Health, f.o.Clock.Now(), permit, o)
		return events, true
	})
	if err != nil {
		return nil, breaker.State{}
	}
	return events, st
}

func (f *Fallback) toLocalLocked(now breaker.Instant, wait time.Duration, reason error) {
	f.route, f.down = onLocal, reason
	f.lookAgain = now.Wall.Add(max(wait, lookAgainWhileProbing))
}
