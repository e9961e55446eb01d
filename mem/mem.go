// Package mem is an in-memory fusebox.Admin, for Go programs that embed
// fusebox in one long-running process, and for tests. State lives only as
// long as the Store.
package mem

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/budgetlog"
	"github.com/fusebox-hq/fusebox/internal/eventorder"
)

var (
	_ fusebox.Admin       = (*Store)(nil)
	_ answers.Store       = (*Store)(nil)
	_ fusebox.BudgetStore = (*Store)(nil)
)

// Store keeps circuit state in memory. It is safe for concurrent use. Load,
// Count and Counts, the calls of every healthy Do, take no lock: each
// circuit's State is an immutable value behind an atomic pointer and its
// counters are atomic, so readers on many cores share nothing they write.
type Store struct {
	// circuits maps names to records. The map is never changed once
	// published: a new circuit (under mu) publishes a copy, so that a
	// lookup is one atomic load and a plain map read. Circuits are made far
	// more rarely than they are used.
	circuits atomic.Pointer[map[string]*circuit]

	mu      sync.Mutex // serialises Update, GC, new circuits and the maps below
	events  map[string][]breaker.Event
	answers map[string]answers.Answer
	locks   map[string]chan struct{} // Exclusive's, a semaphore of one a key

	budgetMu sync.Mutex // serialises SpendBudget, apart from Update
	budgets  map[string]*budgetlog.Log
}

// circuit is one circuit's record, made by the first Count or stored State:
// every circuit in the map is one Names lists.
type circuit struct {
	state atomic.Pointer[breaker.State] // nil until first stored; a stored State is never changed
	// The counters change on every call: on a cache line of their own they
	// do not evict the state pointer every Load reads from other cores.
	_ [56]byte
	counter
}

// New returns an empty Store.
func New() *Store {
	s := &Store{
		events:  map[string][]breaker.Event{},
		answers: map[string]answers.Answer{},
		locks:   map[string]chan struct{}{},
		budgets: map[string]*budgetlog.Log{},
	}
	s.circuits.Store(&map[string]*circuit{})
	return s
}

func (s *Store) circuit(name string) *circuit { return (*s.circuits.Load())[name] }

// add returns the circuit's record, making it when there is none.
func (s *Store) add(name string) *circuit {
	if k := s.circuit(name); k != nil {
		return k
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(name)
}

func (s *Store) addLocked(name string) *circuit {
	old := *s.circuits.Load()
	if k := old[name]; k != nil {
		return k
	}
	k := &circuit{}
	m := maps.Clone(old)
	m[name] = k
	s.circuits.Store(&m)
	return k
}

// Load returns the circuit's state: a copy, which the caller may change. It
// is on the path of every call, so it copies the State once, straight into
// its result (a helper returning the State would copy it twice more).
func (s *Store) Load(_ context.Context, name string) (breaker.State, error) {
	var p *breaker.State
	if k := s.circuit(name); k != nil {
		p = k.state.Load()
	}
	switch {
	case p == nil:
		return breaker.State{Name: name}, nil
	case p.Probes == nil:
		return *p, nil
	}
	st := *p
	st.Probes = slices.Clone(st.Probes) // the stored value is never changed
	return st, nil
}

// Peek is Load and Counts: memory holds no record that could be damaged,
// and neither changes anything.
func (s *Store) Peek(ctx context.Context, name string) (breaker.State, fusebox.Counts, error) {
	st, err := s.Load(ctx, name)
	if err != nil {
		return st, fusebox.Counts{}, err
	}
	c, err := s.Counts(ctx, name)
	return st, c, err
}

// PeekNames is Names, which changes nothing.
func (s *Store) PeekNames(ctx context.Context) ([]string, error) { return s.Names(ctx) }

// Update applies fn under the Store's lock.
func (s *Store) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _ := s.Load(ctx, name)
	events, changed := fn(&st)
	if changed {
		stored := st
		stored.Probes = slices.Clone(st.Probes)
		s.addLocked(name).state.Store(&stored)
		s.events[name] = append(s.events[name], events...)
	}
	return st, nil
}

// SpendBudget decides an attempt under the circuit's retry budget, kept in
// memory apart from its State: a budget alone makes no circuit Names lists.
func (s *Store) SpendBudget(_ context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (fusebox.BudgetSpend, error) {
	s.budgetMu.Lock()
	defer s.budgetMu.Unlock()
	l := s.budgets[name]
	if l == nil {
		l = &budgetlog.Log{}
		s.budgets[name] = l
	}
	return l.Spend(b, now, retry), nil
}

// Count adds c to the circuit's counters.
func (s *Store) Count(_ context.Context, name string, c fusebox.Counts) error {
	s.add(name).add(c)
	return nil
}

// Counts returns the circuit's counters.
func (s *Store) Counts(_ context.Context, name string) (fusebox.Counts, error) {
	k := s.circuit(name)
	if k == nil {
		return fusebox.Counts{}, nil
	}
	return k.load(), nil
}

// counter is one circuit's Counts, added to atomically.
type counter struct {
	successes, failures, skips atomic.Uint64
	lastSuccess                atomic.Int64 // Unix nanoseconds; 0: none
}

func (n *counter) add(c fusebox.Counts) {
	if c.Successes != 0 {
		n.successes.Add(c.Successes)
	}
	if c.Failures != 0 {
		n.failures.Add(c.Failures)
	}
	if c.Skips != 0 {
		n.skips.Add(c.Skips)
	}
	if c.LastSuccess.IsZero() {
		return
	}
	t := c.LastSuccess.UnixNano()
	for {
		old := n.lastSuccess.Load()
		if old >= t || n.lastSuccess.CompareAndSwap(old, t) {
			return
		}
	}
}

func (n *counter) load() fusebox.Counts {
	c := fusebox.Counts{Successes: n.successes.Load(), Failures: n.failures.Load(), Skips: n.skips.Load()}
	if t := n.lastSuccess.Load(); t != 0 {
		c.LastSuccess = time.Unix(0, t)
	}
	return c
}

// Names lists the circuits with state or counters, sorted.
func (s *Store) Names(context.Context) ([]string, error) {
	return slices.Sorted(maps.Keys(*s.circuits.Load())), nil
}

// Events returns the circuit's events at or after since.
func (s *Store) Events(_ context.Context, name string, since time.Time) ([]breaker.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []breaker.Event
	for _, e := range s.events[name] {
		if !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ScanEvents hands fn the circuit's events at or after since, outside the
// store's lock (fn may use the store).
func (s *Store) ScanEvents(ctx context.Context, name string, since time.Time, fn func(breaker.Event) bool) error {
	evs, _ := s.Events(ctx, name, since)
	for _, e := range evs {
		if !fn(e) {
			break
		}
	}
	return nil
}

// AllEvents returns every circuit's events at or after since, by time.
func (s *Store) AllEvents(_ context.Context, since time.Time) ([]breaker.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []breaker.Event
	for _, evs := range s.events {
		for _, e := range evs {
			if !e.Time.Before(since) {
				out = append(out, e)
			}
		}
	}
	eventorder.Sort(out)
	return out, nil
}

// SaveAnswer keeps a copy of a.
func (s *Store) SaveAnswer(_ context.Context, key string, a answers.Answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Body = slices.Clone(a.Body)
	s.answers[key] = a
	return nil
}

// LoadAnswer returns the kept answer.
func (s *Store) LoadAnswer(_ context.Context, key string) (answers.Answer, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.answers[key]
	a.Body = slices.Clone(a.Body)
	return a, ok, nil
}

// Exclusive runs fn holding key's lock, or returns ctx's error when ctx ends
// first.
func (s *Store) Exclusive(ctx context.Context, key string, fn func() error) error {
	s.mu.Lock()
	lock, ok := s.locks[key]
	if !ok {
		lock = make(chan struct{}, 1)
		s.locks[key] = lock
	}
	s.mu.Unlock()
	select {
	case lock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-lock }()
	return fn()
}

// GC drops what has not been updated for unusedFor and events older than
// eventsFor.
func (s *Store) GC(_ context.Context, now time.Time, unusedFor, eventsFor time.Duration) (fusebox.GCReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r fusebox.GCReport
	kept := maps.Clone(*s.circuits.Load())
	for name, k := range kept {
		unused := now.Sub(k.load().LastSuccess) > unusedFor
		if st := k.state.Load(); st != nil {
			unused = unused && !st.UpdatedAt.IsZero() && now.Sub(st.UpdatedAt) > unusedFor && !st.TripInForce(now)
		}
		if unused {
			delete(kept, name)
			delete(s.events, name)
			s.budgetMu.Lock()
			delete(s.budgets, name)
			s.budgetMu.Unlock()
			r.Circuits = append(r.Circuits, name)
		}
	}
	s.circuits.Store(&kept)
	for key, a := range s.answers {
		if now.Sub(a.StoredAt) > unusedFor {
			delete(s.answers, key)
			r.Answers = append(r.Answers, key)
		}
	}
	for name, evs := range s.events {
		keep := evs[:0]
		for _, e := range evs {
			if now.Sub(e.Time) <= eventsFor {
				keep = append(keep, e)
			}
		}
		r.Events += len(evs) - len(keep)
		s.events[name] = keep
	}
	slices.Sort(r.Circuits)
	slices.Sort(r.Answers)
	return r, nil
}

// Close does nothing.
func (s *Store) Close() error { return nil }
