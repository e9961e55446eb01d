// Package mem is an in-memory fusebox.Store, for Go programs that embed
// fusebox in one long-running process, and for tests. State lives only as
// long as the Store.
package mem

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-hq/fusebox"
)

var (
	_ fusebox.Store       = (*Store)(nil)
	_ fusebox.AnswerStore = (*Store)(nil)
)

// Store keeps circuit state in memory. It is safe for concurrent use: Load
// and Count, the calls of every healthy Do, share a read lock.
type Store struct {
	mu      sync.RWMutex
	states  map[string]fusebox.State
	counts  map[string]*counter
	events  map[string][]fusebox.Event
	answers map[string]fusebox.Answer
	locks   map[string]chan struct{} // Exclusive's, a semaphore of one a key
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		states:  map[string]fusebox.State{},
		counts:  map[string]*counter{},
		events:  map[string][]fusebox.Event{},
		answers: map[string]fusebox.Answer{},
		locks:   map[string]chan struct{}{},
	}
}

// Load returns the circuit's state.
func (s *Store) Load(_ context.Context, name string) (fusebox.State, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.load(name), nil
}

func (s *Store) load(name string) fusebox.State {
	st, ok := s.states[name]
	if !ok {
		return fusebox.State{Name: name}
	}
	st.Probes = slices.Clone(st.Probes)
	return st
}

// Update applies fn under the Store's lock.
func (s *Store) Update(_ context.Context, name string, fn func(*fusebox.State) ([]fusebox.Event, bool)) (fusebox.State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.load(name)
	events, changed := fn(&st)
	if changed {
		s.states[name] = st
		s.events[name] = append(s.events[name], events...)
	}
	return st, nil
}

// Count adds c to the circuit's counters, under the read lock: the counters
// are atomic.
func (s *Store) Count(_ context.Context, name string, c fusebox.Counts) error {
	s.mu.RLock()
	n := s.counts[name]
	s.mu.RUnlock()
	if n == nil {
		s.mu.Lock()
		if n = s.counts[name]; n == nil {
			n = &counter{}
			s.counts[name] = n
		}
		s.mu.Unlock()
	}
	n.add(c)
	return nil
}

// Counts returns the circuit's counters.
func (s *Store) Counts(_ context.Context, name string) (fusebox.Counts, error) {
	s.mu.RLock()
	n := s.counts[name]
	s.mu.RUnlock()
	return n.load(), nil
}

// counter is one circuit's Counts, added to atomically.
type counter struct {
	successes, failures, skips atomic.Uint64
	lastSuccess                atomic.Int64 // Unix nanoseconds; 0: none
}

func (n *counter) add(c fusebox.Counts) {
	n.successes.Add(c.Successes)
	n.failures.Add(c.Failures)
	n.skips.Add(c.Skips)
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
	if n == nil {
		return fusebox.Counts{}
	}
	c := fusebox.Counts{Successes: n.successes.Load(), Failures: n.failures.Load(), Skips: n.skips.Load()}
	if t := n.lastSuccess.Load(); t != 0 {
		c.LastSuccess = time.Unix(0, t)
	}
	return c
}

// Names lists the circuits with state or counters, sorted.
func (s *Store) Names(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.states)+len(s.counts))
	for n := range s.states {
		names = append(names, n)
	}
	for n := range s.counts {
		names = append(names, n)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Events returns the circuit's events at or after since.
func (s *Store) Events(_ context.Context, name string, since time.Time) ([]fusebox.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fusebox.Event
	for _, e := range s.events[name] {
		if !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out, nil
}

// AllEvents returns every circuit's events at or after since, by time.
func (s *Store) AllEvents(_ context.Context, since time.Time) ([]fusebox.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []fusebox.Event
	for _, evs := range s.events {
		for _, e := range evs {
			if !e.Time.Before(since) {
				out = append(out, e)
			}
		}
	}
	fusebox.SortEvents(out)
	return out, nil
}

// SaveAnswer keeps a copy of a.
func (s *Store) SaveAnswer(_ context.Context, key string, a fusebox.Answer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Body = slices.Clone(a.Body)
	s.answers[key] = a
	return nil
}

// LoadAnswer returns the kept answer.
func (s *Store) LoadAnswer(_ context.Context, key string) (fusebox.Answer, bool, error) {
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
	for name, st := range s.states {
		if !st.UpdatedAt.IsZero() && now.Sub(st.UpdatedAt) > unusedFor && !st.TripInForce(now) &&
			now.Sub(s.counts[name].load().LastSuccess) > unusedFor {
			delete(s.states, name)
			delete(s.counts, name)
			delete(s.events, name)
			r.Circuits = append(r.Circuits, name)
		}
	}
	for name, c := range s.counts {
		if _, ok := s.states[name]; !ok && now.Sub(c.load().LastSuccess) > unusedFor {
			delete(s.counts, name)
			r.Circuits = append(r.Circuits, name)
		}
	}
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
