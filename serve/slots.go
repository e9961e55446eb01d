package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"
)

// DefaultUnprovenIdle is how long a connection that has not shown the
// token may stay kept-alive between requests.
const DefaultUnprovenIdle = 5 * time.Second

// slots holds the daemon's connections within its cap, so that no one
// without the token holds a slot a caller with it needs. A connection is
// proven once a request on it carries the token (on a daemon without a
// token, none is). At the cap, a new connection takes the slot of the
// unproven one in no request that has held it longest for nothing: a
// kept-alive page GET gone idle, a caller that has sent nothing (or not
// its whole header) for newGrace, one whose refusal was written
// servedGrace ago. Only when every slot is proven, in a request, or within
// its grace does a new connection wait for one, in the listen backlog,
// until the first grace ends. An unproven connection is kept alive for
// unprovenIdle at most between requests.
type slots struct {
	cap          int
	unprovenIdle time.Duration
	mu           sync.Mutex
	conns        map[net.Conn]*slot
	released     chan struct{} // a slot may have come free; buffered 1
}

type slot struct {
	conn     net.Conn
	proven   bool
	state    http.ConnState
	since    time.Time   // when it entered state
	handling bool        // a request of it is in the daemon's handler
	served   bool        // its request's handler has returned (net/http drains or closes it)
	servedAt time.Time   // when it was
	waiting  bool        // it had bytes net/http had not read when last looked at (see victim)
	idle     *time.Timer // an unproven idle connection's end
}

// newGrace is how long a new connection, or one whose request has begun
// but not reached the handler, keeps its slot at the cap with nothing
// waiting to be read: long enough for a caller between its connect and its
// write; no longer, since a caller that sends nothing (or one byte at a
// time) holds it for nothing. A request already sent and not yet read (a
// busy machine's scheduler) has bytes waiting, and keeps its slot.
const newGrace = 50 * time.Millisecond

// servedGrace is how long a connection whose answer is written, and which
// net/http is ending (a refusal), keeps its slot at the cap: long enough
// for a caller that reads its answer to have it before the close resets
// the connection.
const servedGrace = 50 * time.Millisecond

func newSlots(cap int, unprovenIdle time.Duration) *slots {
	return &slots{cap: cap, unprovenIdle: unprovenIdle, conns: map[net.Conn]*slot{}, released: make(chan struct{}, 1)}
}

// listener wraps ln: its Accept waits for a slot, taking one from an
// unproven connection at the cap.
func (s *slots) listener(ln net.Listener) net.Listener {
	return &slotListener{Listener: ln, s: s, done: make(chan struct{})}
}

type slotListener struct {
	net.Listener
	s    *slots
	once sync.Once
	done chan struct{} // closed by Close: ends a wait for a slot
}

func (l *slotListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *slotListener) Accept() (net.Conn, error) {
	if err := l.s.wait(l.done); err != nil {
		return nil, err
	}
	tc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &slotConn{tc}
	l.s.mu.Lock()
	l.s.conns[c] = &slot{conn: c, state: http.StateNew, since: time.Now()}
	l.s.mu.Unlock()
	return c, nil
}

// SyscallConn lets victim peek at the connection beneath.
func (c *slotConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// slotConn is an accepted connection as net/http gets it: without the
// TCP connection's CloseWrite, so that net/http does not half-close a
// connection it is about to close (a refusal, say) before it lets go of
// it. Its caller then sees the end only when the slot is free again, and a
// flood of refused callers cannot come back faster than their connections
// are closed (each half-closed one held its slot, and a descriptor, for
// the half second net/http holds a close back, while its caller was
// already back on a new one: 1,900 a second from 20 callers).
type slotConn struct{ net.Conn }

// wait returns once fewer than cap connections are held, closing the
// oldest unproven connection in no request to make room when there is
// one. done's close ends the wait.
func (s *slots) wait(done <-chan struct{}) error {
	for {
		s.mu.Lock()
		if len(s.conns) < s.cap {
			s.mu.Unlock()
			return nil
		}
		victim, next := s.victim()
		if victim != nil {
			delete(s.conns, victim.conn) // its slot is free now; its close follows
			s.stopIdle(victim)
			s.mu.Unlock()
			victim.conn.Close()
			return nil
		}
		s.mu.Unlock()
		// Every slot is proven, in a request or in its grace: wait for a
		// release or the end of the first grace, and look again now and
		// then, as a request may end without a release.
		t := time.NewTimer(min(next, 100*time.Millisecond))
		select {
		case <-s.released:
		case <-t.C:
		case <-done:
			t.Stop()
			return net.ErrClosed
		}
		t.Stop()
	}
}

// victim returns the unproven connection in no request whose slot is
// taken first: the one that has held it longest past its grace. When there
// is none, next is how soon a grace ends (at most newGrace). s.mu is held.
func (s *slots) victim() (v *slot, next time.Duration) {
	now := time.Now()
	next = newGrace
	var candidates []*slot
	for _, sl := range s.conns {
		if sl.proven || sl.handling || sl.waiting {
			continue
		}
		switch {
		case sl.state == http.StateIdle:
		case sl.served:
			// net/http is ending it: a refusal's answer written, its body
			// read on for refusedBodyGrace, its close held back as long
			// against a reset. A caller reading its answer has it within
			// servedGrace; past that, the slot is worth more to a caller
			// in the backlog than the answer to one not reading it.
			if left := servedGrace - now.Sub(sl.servedAt); left > 0 {
				next = min(next, left)
				continue
			}
		case now.Sub(sl.since) < newGrace: // a new connection, or a request being read
			next = min(next, newGrace-now.Sub(sl.since))
			continue
		}
		candidates = append(candidates, sl)
	}
	slices.SortFunc(candidates, func(a, b *slot) int { return a.held().Compare(b.held()) })
	for _, v := range candidates {
		if v.state == http.StateIdle || v.served || !unread(v.conn) {
			return v, 0
		}
		// Its caller has sent what net/http has not read yet (a busy
		// machine's scheduler has not run its goroutine): a request
		// under way, not a silent caller. It keeps its slot until its
		// state changes.
		v.waiting = true
	}
	return nil, next
}

// held returns since when the slot has been held for nothing: its
// answer's end when it was served, else its state's start.
func (sl *slot) held() time.Time {
	if sl.served && sl.state != http.StateIdle {
		return sl.servedAt
	}
	return sl.since
}

// unread reports whether c has bytes its reader has not taken yet. It
// peeks without taking the connection's read lock, which net/http's
// reader may hold; a connection it cannot peek at counts as having some.
func unread(c net.Conn) bool {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	pending := true
	rc.Control(func(fd uintptr) { pending = peek(fd) })
	return pending
}

// connState is http.Server's ConnState hook.
func (s *slots) connState(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.conns[c]
	if !ok {
		return // evicted already
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(s.conns, c)
		s.stopIdle(sl)
		select {
		case s.released <- struct{}{}:
		default:
		}
		return
	case http.StateIdle:
		if !sl.proven && s.unprovenIdle > 0 {
			sl.idle = time.AfterFunc(s.unprovenIdle, func() { s.endIdle(c) })
		}
	case http.StateActive:
		s.stopIdle(sl)
		sl.served = false
	}
	sl.waiting = false
	sl.state, sl.since = state, time.Now()
}

// endIdle closes c when it is still idle and unproven.
func (s *slots) endIdle(c net.Conn) {
	s.mu.Lock()
	sl, ok := s.conns[c]
	end := ok && !sl.proven && sl.state == http.StateIdle
	s.mu.Unlock()
	if end {
		c.Close()
	}
}

func (s *slots) stopIdle(sl *slot) {
	if sl.idle != nil {
		sl.idle.Stop()
		sl.idle = nil
	}
}

// prove marks the connection of ctx (http.Server's ConnContext) proven.
func (s *slots) prove(ctx context.Context) { s.update(ctx, func(sl *slot) { sl.proven = true }) }

// serve runs h as the handler of the request of ctx's connection: while it
// runs, the connection keeps its slot.
func (s *slots) serve(ctx context.Context, h func()) {
	s.update(ctx, func(sl *slot) { sl.handling = true })
	defer s.update(ctx, func(sl *slot) { sl.handling, sl.served, sl.servedAt = false, true, time.Now() })
	h()
}

func (s *slots) update(ctx context.Context, f func(*slot)) {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if c == nil || s == nil {
		return // not served through Serve (a test's handler)
	}
	s.mu.Lock()
	if sl, ok := s.conns[c]; ok {
		f(sl)
	}
	s.mu.Unlock()
}

// connKey holds a request's connection in its context.
type connKey struct{}

func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
