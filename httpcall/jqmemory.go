package httpcall

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// DefaultJQMemory is the memory the jq programs of a Client may use at
// once when no JQMemory is given: one program in a child at its bound, or
// four in-process. One, not two: two bodies decoded at once kept a daemon
// over the 128 MiB of issue 36 (six 4 MB answers at once: 113-193 MiB of
// peak resident set with two, 101-115 MiB with one).
const DefaultJQMemory = jqMemory

// JQMemory bounds the memory that the expect.jq and extract programs of
// the Clients sharing it may use at once (WithJQMemory): each evaluation
// holds its own bound while it runs (jqInProcessMemory in-process, jqMemory
// in a child, see evaluate), and one that would take the total past the
// limit waits, first come first served, until others end or its attempt's
// timeout; then its attempt fails as its jq program's failure. A daemon
// gives one to every Client it makes, so that twelve callers at once cannot
// take twelve programs' bounds. It is safe for concurrent use.
type JQMemory struct {
	total int64

	mu     sync.Mutex
	used   int64
	peak   int64
	queue  []*jqWaiter // waiting, in the order they came
	waited uint64      // evaluations that had to wait
}

type jqWaiter struct {
	n       int64
	granted bool
	ready   chan struct{}
}

// NewJQMemory returns a bound of total bytes for jq programs in flight;
// one program's bound (128 MiB) at least, to which a smaller total is
// raised.
func NewJQMemory(total int64) *JQMemory {
	return &JQMemory{total: max(total, jqMemory)}
}

// WithJQMemory has the Client's jq programs share m's bound (default: a
// JQMemory of DefaultJQMemory of its own).
func WithJQMemory(m *JQMemory) Option { return func(s *settings) { s.jqMemory = m } }

// Total returns the bound, in bytes.
func (m *JQMemory) Total() int64 { return m.total }

// Peak returns the most the programs in flight have held at once, in bytes.
func (m *JQMemory) Peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.peak
}

// Waited returns how many evaluations have had to wait for their share.
func (m *JQMemory) Waited() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waited
}

// acquire takes n bytes of the bound, waiting for them until ctx ends. It
// returns release, which gives them back, or the error the evaluation fails
// with.
func (m *JQMemory) acquire(ctx context.Context, n int64) (release func(), err error) {
	n = min(n, m.total)
	release = func() {
		m.mu.Lock()
		m.used -= n
		m.grantLocked()
		m.mu.Unlock()
	}
	m.mu.Lock()
	if len(m.queue) == 0 && m.used+n <= m.total {
		m.takeLocked(n)
		m.mu.Unlock()
		return release, nil
	}
	w := &jqWaiter{n: n, ready: make(chan struct{})}
	m.queue = append(m.queue, w)
	m.waited++
	m.mu.Unlock()
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.granted { // in the same moment
		m.used -= n
	} else {
		m.queue = slices.DeleteFunc(m.queue, func(q *jqWaiter) bool { return q == w })
	}
	m.grantLocked() // the head may have gone: those behind it may fit
	return nil, fmt.Errorf("no jq memory free until the attempt's end: the %d MiB that jq programs may use at once were in use (%w)", m.total>>20, context.Cause(ctx))
}

func (m *JQMemory) takeLocked(n int64) {
	m.used += n
	m.peak = max(m.peak, m.used)
}

// grantLocked gives their share to the waiters at the head of the queue
// that now fit.
func (m *JQMemory) grantLocked() {
	for len(m.queue) > 0 && m.used+m.queue[0].n <= m.total {
		w := m.queue[0]
		m.queue = m.queue[1:]
		m.takeLocked(w.n)
		w.granted = true
		close(w.ready)
	}
}
