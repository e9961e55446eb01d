package failopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// DefaultRetryAfter is how long a Fallback keeps to its local store before it
// tries the primary again.
const DefaultRetryAfter = 30 * time.Second

// FallbackOptions tune a Fallback.
type FallbackOptions struct {
	// RetryAfter is how long to stay on the local store once the primary
	// failed before trying the primary again (default DefaultRetryAfter): a
	// daemon resumes sharing state by itself; a cron run is over long before.
	RetryAfter time.Duration
	Logger     *slog.Logger     // for the one warning a fallback gives; nil: none
	Now        func() time.Time // the clock RetryAfter is measured on; nil: time.Now
	// Down, when set, is how the primary just failed, before the Fallback
	// was made (a process's fast path found it down): the Fallback starts
	// on the local store, warning with it, instead of waiting for the
	// primary's budget a second time.
	Down error
}

var (
	_ fusebox.Store       = (*Fallback)(nil)
	_ fusebox.AnswerStore = (*Fallback)(nil)
)

// Fallback is a Store that uses a shared primary store (Redis) while it
// answers, and a local one (the state dir) when it does not: the first
// failure of the primary warns once, naming the reason, and moves this
// process to the local store, opened then, so that no call waits longer
// than the primary's own budget or fails because of it. After RetryAfter
// the primary is tried again; when it answers, the Fallback resumes on it.
//
// What one process wrote locally stays local: the shared circuits do not
// learn of failures seen while on the local store, and come back as the
// primary kept them (see the README on what a fallback keeps and loses).
//
// Errors that say nothing about the primary's health pass through without a
// fallback: an invalid name, the caller's own ctx ending, a busy lock
// (fusebox.ErrLockTimeout), and fn's own error from Exclusive.
//
// The wrapper lives here, not in package redis, because it knows nothing of
// Redis: any remote Store can be the primary, and every front end gets it by
// opening its store through Open.
//
// A Fallback is safe for concurrent use.
type Fallback struct {
	primary   fusebox.Store
	openLocal func() (fusebox.Store, error)
	o         FallbackOptions

	mu        sync.Mutex
	local     fusebox.Store // opened at the first fallback
	localErr  error
	downSince time.Time // zero while the primary is in use
}

// NewFallback returns a Store that uses primary and falls back to the store
// openLocal opens.
func NewFallback(primary fusebox.Store, openLocal func() (fusebox.Store, error), o FallbackOptions) *Fallback {
	if o.RetryAfter <= 0 {
		o.RetryAfter = DefaultRetryAfter
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	f := &Fallback{primary: primary, openLocal: openLocal, o: o}
	if o.Down != nil {
		f.failed(o.Down)
	}
	return f
}

// Primary returns the primary store.
func (f *Fallback) Primary() fusebox.Store { return f.primary }

// OnLocal reports whether the Fallback is using its local store.
func (f *Fallback) OnLocal() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.downSince.IsZero()
}

// pick returns the primary, or the local store while the primary is down
// and not yet due for another try.
func (f *Fallback) pick() (s fusebox.Store, primary bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.downSince.IsZero() || f.o.Now().Sub(f.downSince) >= f.o.RetryAfter {
		return f.primary, true
	}
	return f.localLocked(), false
}

func (f *Fallback) localLocked() fusebox.Store {
	if f.local == nil && f.localErr == nil {
		f.local, f.localErr = f.openLocal()
	}
	if f.localErr != nil {
		return Unavailable{Err: fmt.Errorf("local state store: %w", f.localErr)}
	}
	return f.local
}

// failed moves to the local store after the primary failed with err,
// warning the first time of each outage, and returns the local store.
func (f *Fallback) failed(err error) fusebox.Store {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.downSince.IsZero() && f.o.Logger != nil {
		f.o.Logger.Warn("shared state store unreachable; using the local state for this process", "err", err)
	}
	f.downSince = f.o.Now()
	return f.localLocked()
}

func (f *Fallback) answered() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.downSince.IsZero() {
		f.downSince = time.Time{}
		if f.o.Logger != nil {
			f.o.Logger.Info("shared state store is back; using it again")
		}
	}
}

// healthy reports whether err says the primary works: it answered, or the
// error is the caller's doing or a busy lock.
//
// The caller's deadline is checked by the clock too: a socket deadline set
// from it can fire a moment before ctx itself reports it ended.
func healthy(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, fusebox.ErrLockTimeout) {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// use runs op on the primary or, when it fails, on the local store.
func (f *Fallback) use(ctx context.Context, op func(fusebox.Store) error) error {
	s, primary := f.pick()
	err := op(s)
	if !primary {
		return err
	}
	if healthy(ctx, err) {
		f.answered()
		return err
	}
	return op(f.failed(err))
}

func (f *Fallback) Load(ctx context.Context, name string) (st fusebox.State, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.State{}, err
	}
	err = f.use(ctx, func(s fusebox.Store) (err error) { st, err = s.Load(ctx, name); return err })
	return st, err
}

func (f *Fallback) Update(ctx context.Context, name string, fn func(*fusebox.State) ([]fusebox.Event, bool)) (st fusebox.State, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.State{}, err
	}
	err = f.use(ctx, func(s fusebox.Store) (err error) { st, err = s.Update(ctx, name, fn); return err })
	return st, err
}

func (f *Fallback) Count(ctx context.Context, name string, c fusebox.Counts) error {
	if err := fusebox.ValidateName(name); err != nil {
		return err
	}
	return f.use(ctx, func(s fusebox.Store) error { return s.Count(ctx, name, c) })
}

func (f *Fallback) Counts(ctx context.Context, name string) (c fusebox.Counts, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.Counts{}, err
	}
	err = f.use(ctx, func(s fusebox.Store) (err error) { c, err = s.Counts(ctx, name); return err })
	return c, err
}

func (f *Fallback) Names(ctx context.Context) (names []string, err error) {
	err = f.use(ctx, func(s fusebox.Store) (err error) { names, err = s.Names(ctx); return err })
	return names, err
}

func (f *Fallback) Events(ctx context.Context, name string, since time.Time) (evs []fusebox.Event, err error) {
	if err := fusebox.ValidateName(name); err != nil {
		return nil, err
	}
	err = f.use(ctx, func(s fusebox.Store) (err error) { evs, err = s.Events(ctx, name, since); return err })
	return evs, err
}

func (f *Fallback) AllEvents(ctx context.Context, since time.Time) (evs []fusebox.Event, err error) {
	err = f.use(ctx, func(s fusebox.Store) (err error) { evs, err = s.AllEvents(ctx, since); return err })
	return evs, err
}

func (f *Fallback) GC(ctx context.Context, now time.Time, unusedFor, eventsFor time.Duration) (r fusebox.GCReport, err error) {
	err = f.use(ctx, func(s fusebox.Store) (err error) { r, err = s.GC(ctx, now, unusedFor, eventsFor); return err })
	return r, err
}

func answerStore(s fusebox.Store) (fusebox.AnswerStore, error) {
	a, ok := s.(fusebox.AnswerStore)
	if !ok {
		return nil, fmt.Errorf("%T keeps no answers", s)
	}
	return a, nil
}

func (f *Fallback) SaveAnswer(ctx context.Context, key string, a fusebox.Answer) error {
	if err := fusebox.ValidateName(key); err != nil {
		return err
	}
	return f.use(ctx, func(s fusebox.Store) error {
		as, err := answerStore(s)
		if err != nil {
			return err
		}
		return as.SaveAnswer(ctx, key, a)
	})
}

func (f *Fallback) LoadAnswer(ctx context.Context, key string) (a fusebox.Answer, ok bool, err error) {
	if err := fusebox.ValidateName(key); err != nil {
		return fusebox.Answer{}, false, err
	}
	err = f.use(ctx, func(s fusebox.Store) error {
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
	err := f.use(ctx, func(s fusebox.Store) error {
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

// Close closes both stores.
func (f *Fallback) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.primary.Close()
	if f.local != nil {
		err = errors.Join(err, f.local.Close())
	}
	return err
}
