package statestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/mem"
)

// FallbackOptions tune a Fallback.
type FallbackOptions struct {
	Logger *slog.Logger // for the outage's one warning and one notice, and a loss of the primary's data; nil: none
	// Clock times the availability circuit; nil: fusebox.WallClock.
	Clock fusebox.Clock
	// Health is the availability circuit's policy; zero: DefaultHealthPolicy.
	Health breaker.Policy
	// Refused, when set, reports whether an error of the primary says it is
	// plainly not there (a refused connection: redis.Refused), which opens
	// the availability circuit at once; any other outage (a timeout) opens
	// it only after Health.TripAfter in a row.
	Refused func(error) bool
	// Answered, when set, reports whether an error of the primary came
	// from a primary that answered (a problem of one record, such as
	// redis.Answered): it is returned as it is, and the primary stays in
	// use. Other errors, but for the caller's own ctx ending and a busy
	// lock, are an outage.
	Answered func(error) bool
}

// Local is what a Fallback keeps on its own host, in the local state dir.
type Local struct {
	// Store is the replica of the shared circuits, the last shared state
	// this host saw of each (written when it changes, not on every call),
	// and, while the primary is away, the store every call uses.
	Store fusebox.Admin
	// Merged holds, for each circuit, the shared state last copied into
	// Store, and (as its Counts) what of Store's counts has been merged
	// back into the primary, with the time of the last event merged as
	// LastSuccess.
	Merged fusebox.Admin
	// Health holds the primary's availability circuit.
	Health fusebox.Admin
	// EpochFile is where the host keeps the epoch of the primary's dataset
	// it last saw (see checkEpoch); "" for none: a primary that loses its
	// data is then not noticed, and the replica keeps what the loss ended.
	EpochFile string
}

var (
	_ fusebox.Admin       = (*Fallback)(nil)
	_ answers.Store       = (*Fallback)(nil)
	_ fusebox.BudgetStore = (*Fallback)(nil)
)

// Fallback is a Store that uses a shared primary store (Redis) while it
// answers, and the host's replica of it (Local.Store, in the state dir)
// while it does not, so that an open circuit or a trip held in the primary
// stays in force through its outage:
//
//   - The primary's availability is a circuit in Local.Health, shared by
//     every process of the host: the first failure opens it, with one
//     warning; while it is open every call goes straight to the replica;
//     one process at a time probes the primary again, and its success closes
//     the circuit, with one notice.
//   - Whenever a process sees a circuit's shared state change (a transition,
//     a trip, a reset), it copies it into the replica.
//   - The probe that finds the primary back merges into it what the host
//     recorded on the replica meanwhile: counts and events added, and each
//     circuit's state where the replica's is the stricter (see stricter).
//   - When the primary has lost its data (restarted with an empty
//     dataset, or flushed), the first process of the host to read it
//     says so, restores nothing (another host may have reset any circuit
//     since) and has the replica follow the primary (see checkEpoch).
//
// Errors that say nothing about the primary's availability pass through
// without a fallback: an invalid name, the caller's own ctx ending, a busy
// lock (fusebox.ErrLockTimeout), fn's own error from Exclusive, and those
// FallbackOptions.Answered accepts.
//
// The wrapper lives here, not in package redis, because it knows nothing of
// Redis: any remote Store can be the primary, and every front end gets it by
// opening its store through Open.
//
// A Fallback is safe for concurrent use.
type Fallback struct {
	primary   fusebox.Admin
	openLocal func(create bool) (Local, error)
	o         FallbackOptions

	mu        sync.Mutex
	local     *Local // opened at first use
	localErr  error
	peeked    *Local          // what peek found of Local before this process opened it
	memHealth fusebox.Admin   // the availability circuit when Local has none
	route     route           // where calls go
	permit    breaker.Permit  // this process's on the availability circuit
	lookAgain time.Time       // while onLocal: when to read the availability circuit again
	down      error           // while onLocal: why
	closed    []breaker.Event // the availability circuit's events of the last catch-up
}

// NewFallback returns a Store that uses primary and falls back to what
// openLocal opens, at first use. openLocal(true) creates what is missing;
// openLocal(false), what Peek and PeekNames call, creates nothing and
// leaves each part not there nil.
func NewFallback(primary fusebox.Admin, openLocal func(create bool) (Local, error), o FallbackOptions) *Fallback {
	if o.Clock == nil {
		o.Clock = fusebox.WallClock{}
	}
	if o.Health == (breaker.Policy{}) {
		o.Health = DefaultHealthPolicy
	}
	if o.Answered == nil {
		o.Answered = func(error) bool { return false }
	}
	if o.Refused == nil {
		o.Refused = func(error) bool { return false }
	}
	return &Fallback{primary: primary, openLocal: openLocal, o: o}
}

// Primary returns the primary store.
func (f *Fallback) Primary() fusebox.Admin {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.primary
}

// Down returns why the Fallback is on its local replica, nil while it uses
// the primary: what a daemon's fusebox_state_store_up reports.
func (f *Fallback) Down() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.route != onLocal {
		return nil
	}
	return f.down
}

// pick returns the store to use: the primary, or the local replica while
// the primary is away and not yet due for another look.
func (f *Fallback) pick(ctx context.Context) (s fusebox.Admin, primary bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.route == undecided || f.route == onLocal && !f.o.Clock.Now().Wall.Before(f.lookAgain) {
		f.decideLocked(ctx)
	}
	if f.route == onPrimary {
		return f.primary, true
	}
	return f.replicaLocked(), false
}

func (f *Fallback) localLocked() (*Local, error) {
	if f.local == nil && f.localErr == nil {
		l, err := f.openLocal(true)
		if err != nil {
			f.localErr = err
		} else {
			f.local = &l
		}
	}
	return f.local, f.localErr
}

// replicaLocked returns the local replica, Unavailable when it cannot be
// opened.
func (f *Fallback) replicaLocked() fusebox.Admin {
	l, err := f.localLocked()
	if err != nil {
		return Unavailable{Err: fmt.Errorf("local state store: %w", err)}
	}
	return l.Store
}

// healthLocked returns the store of the availability circuit: the host's,
// or this process's own when the host has none.
func (f *Fallback) healthLocked() fusebox.Admin {
	if l, err := f.localLocked(); err == nil && l.Health != nil {
		return l.Health
	}
	if f.memHealth == nil {
		f.memHealth = mem.New()
	}
	return f.memHealth
}

// outage reports whether err, from the primary, says it is unavailable: not
// the caller's own doing (ctx ended; a socket deadline set from it can fire a
// moment before ctx reports it ended), nor a busy lock, nor an error of a
// primary that answered (a damaged record it reported is one).
func (f *Fallback) outage(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, fusebox.ErrLockTimeout) || errors.Is(err, fusebox.ErrDamaged) || f.o.Answered(err) {
		return false
	}
	d, ok := ctx.Deadline()
	return !ok || time.Now().Before(d)
}

// failed moves to the local replica after the primary failed with err and
// returns it.
func (f *Fallback) failed(ctx context.Context, err error) fusebox.Admin {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.route != onLocal {
		f.failedLocked(ctx, err)
	}
	return f.replicaLocked()
}

// use runs op on the primary or, when it is away, on the local replica, and
// reports whether op ran on the primary.
func (f *Fallback) use(ctx context.Context, op func(fusebox.Admin) error) (onPrimary bool, err error) {
	s, primary := f.pick(ctx)
	err = op(s)
	if !primary || !f.outage(ctx, err) {
		return primary, err
	}
	return false, op(f.failed(ctx, err))
}

func (f *Fallback) Load(ctx context.Context, name string) (st breaker.State, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, err
	}
	primary, err := f.use(ctx, func(s fusebox.Admin) (err error) { st, err = s.Load(ctx, name); return err })
	if primary && err == nil {
		st = f.observe(ctx, name, st)
	}
	return st, err
}

// Peek reads the state and counts as Load and Counts would and changes
// nothing anywhere: see peek.
func (f *Fallback) Peek(ctx context.Context, name string) (st breaker.State, c fusebox.Counts, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fusebox.Counts{}, err
	}
	err = f.peek(ctx, func(s fusebox.Admin) (err error) { st, c, err = s.Peek(ctx, name); return err })
	return st, c, err
}

// PeekNames lists the circuits as Names would and changes nothing
// anywhere: see peek.
func (f *Fallback) PeekNames(ctx context.Context) (names []string, err error) {
	err = f.peek(ctx, func(s fusebox.Admin) (err error) { names, err = s.PeekNames(ctx); return err })
	return names, err
}

// peek runs op, a read that changes nothing, on the primary unless this
// host's availability circuit has it away, and on the replica then or when
// the primary fails now. Nothing is recorded of the primary's
// availability, nothing replicated, nothing merged, and no part of the
// replica is created: one the host does not have reads as empty.
func (f *Fallback) peek(ctx context.Context, op func(fusebox.Admin) error) error {
	f.mu.Lock()
	away, primary := f.awayLocked(ctx), f.primary
	f.mu.Unlock()
	if !away {
		if err := op(primary); !f.outage(ctx, err) {
			return err
		}
	}
	f.mu.Lock()
	l, err := f.peekLocalLocked()
	f.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("local state store: %w", err)
	case l.Store == nil:
		return op(mem.New())
	}
	return op(l.Store)
}

// peekLocalLocked returns the host's Local as peek may read it: the one this
// process opened, or else what of it is there, opened creating nothing (a
// part not there is nil).
func (f *Fallback) peekLocalLocked() (*Local, error) {
	if f.local != nil || f.localErr != nil {
		return f.localLocked()
	}
	if f.peeked == nil {
		l, err := f.openLocal(false)
		if err != nil {
			return nil, err
		}
		f.peeked = &l
	}
	return f.peeked, nil
}

func (f *Fallback) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (st breaker.State, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, err
	}
	moved := false
	record := func(st *breaker.State) ([]breaker.Event, bool) {
		events, changed := fn(st)
		moved = changed && hasTransition(events)
		return events, changed
	}
	primary, err := f.use(ctx, func(s fusebox.Admin) (err error) { st, err = s.Update(ctx, name, record); return err })
	if primary && err == nil {
		if l := f.replicaOf(); l != nil {
			f.checkEpoch(ctx, l)
		}
		if moved {
			f.replicate(ctx, name, st)
		}
	}
	return st, err
}

func hasTransition(events []breaker.Event) bool {
	for _, e := range events {
		if e.Kind == breaker.EventTransition {
			return true
		}
	}
	return false
}

func (f *Fallback) Count(ctx context.Context, name string, c fusebox.Counts) error {
	if err := fusebox.ValidateName(name); err != nil {
		return err
	}
	_, err := f.use(ctx, func(s fusebox.Admin) error { return s.Count(ctx, name, c) })
	return err
}

func (f *Fallback) Counts(ctx context.Context, name string) (c fusebox.Counts, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.Counts{}, err
	}
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) { c, err = s.Counts(ctx, name); return err })
	return c, err
}

func (f *Fallback) Names(ctx context.Context) (names []string, err error) {
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) { names, err = s.Names(ctx); return err })
	return names, err
}

func (f *Fallback) Events(ctx context.Context, name string, since time.Time) (evs []breaker.Event, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return nil, err
	}
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) { evs, err = s.Events(ctx, name, since); return err })
	return evs, err
}

func (f *Fallback) ScanEvents(ctx context.Context, name string, since time.Time, fn func(breaker.Event) bool) error {
	if err := fusebox.ValidateName(name); err != nil {
		return err
	}
	_, err := f.use(ctx, func(s fusebox.Admin) error { return s.ScanEvents(ctx, name, since, fn) })
	return err
}

func (f *Fallback) AllEvents(ctx context.Context, since time.Time) (evs []breaker.Event, err error) {
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) { evs, err = s.AllEvents(ctx, since); return err })
	return evs, err
}

// GC collects the store in use: the primary, or, while it is away, the
// local replica (Down says which).
func (f *Fallback) GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (r fusebox.GCReport, err error) {
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) { r, err = s.GC(ctx, now, unusedFor, eventsFor); return err })
	return r, err
}

func answerStore(s fusebox.Admin) (answers.Store, error) {
	a, ok := s.(answers.Store)
	if !ok {
		return nil, fmt.Errorf("%T keeps no answers", s)
	}
	return a, nil
}

func (f *Fallback) SaveAnswer(ctx context.Context, key string, a answers.Answer) error {
	if err := fusebox.ValidateName(key); err != nil {
		return err
	}
	_, err := f.use(ctx, func(s fusebox.Admin) error {
		as, err := answerStore(s)
		if err != nil {
			return err
		}
		return as.SaveAnswer(ctx, key, a)
	})
	return err
}

func (f *Fallback) LoadAnswer(ctx context.Context, key string) (a answers.Answer, ok bool, err error) {
	if err := fusebox.ValidateName(key); err != nil {
		return answers.Answer{}, false, err
	}
	_, err = f.use(ctx, func(s fusebox.Admin) error {
		as, err := answerStore(s)
		if err != nil {
			return err
		}
		a, ok, err = as.LoadAnswer(ctx, key)
		return err
	})
	return a, ok, err
}

// Exclusive holds the lock of whichever store answers. fn's own error is
// returned as it is, and fn runs at most once.
func (f *Fallback) Exclusive(ctx context.Context, key string, fn func() error) error {
	if err := fusebox.ValidateName(key); err != nil {
		return err
	}
	ran := false
	var fnErr error
	_, err := f.use(ctx, func(s fusebox.Admin) error {
		as, err := answerStore(s)
		if err != nil {
			return err
		}
		err = as.Exclusive(ctx, key, func() error { ran = true; fnErr = fn(); return fnErr })
		if ran {
			return nil // fn's error, or a failed release, says nothing about the store
		}
		return err
	})
	if ran {
		return fnErr
	}
	return err
}

// Close closes the primary and the local stores.
func (f *Fallback) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.primary.Close()
	for _, l := range []*Local{f.local, f.peeked} {
		if l == nil {
			continue
		}
		for _, s := range []fusebox.Admin{l.Store, l.Merged, l.Health} {
			if s != nil {
				err = errors.Join(err, s.Close())
			}
		}
	}
	return err
}

// SpendBudget spends from the retry budget of the store in use: the
// primary's, shared by every host, or while it is away the local replica's,
// shared by this host's processes only. A store without budgets allows
// every attempt.
func (f *Fallback) SpendBudget(ctx context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (spend fusebox.BudgetSpend, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.BudgetSpend{}, err
	}
	_, err = f.use(ctx, func(s fusebox.Admin) (err error) {
		bs, ok := s.(fusebox.BudgetStore)
		if !ok {
			spend = fusebox.BudgetSpend{Allowed: true}
			return nil
		}
		spend, err = bs.SpendBudget(ctx, name, b, now, retry)
		return err
	})
	return spend, err
}
