package fusebox

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// attemptCtx is the context an attempt runs with, ending at a deadline.
//
// When the parent can never be cancelled (context.Background, as most
// in-process callers pass), it arms no timer until someone asks for Done: an
// attempt that never waits on its context costs one allocation and no timer,
// instead of four allocations and a timer. Otherwise it is
// context.WithDeadline.
type attemptCtx struct {
	context.Context
	lazy   *lazyDeadline
	cancel context.CancelFunc
}

func newAttemptCtx(parent context.Context, deadline time.Time) attemptCtx {
	if parent.Done() != nil {
		ctx, cancel := context.WithDeadline(parent, deadline)
		return attemptCtx{Context: ctx, cancel: cancel}
	}
	c := &lazyDeadline{parent: parent, deadline: deadline}
	return attemptCtx{Context: c, lazy: c}
}

// end ends the context once the attempt is over.
func (a attemptCtx) end() {
	if a.lazy != nil {
		a.lazy.end(ctxCanceled)
		return
	}
	a.cancel()
}

// lazyDeadline is a context with a deadline over a parent that is never
// cancelled (its Done is nil, so no ancestor holds a cancellation, and
// context.Cause falls back to Err). It is safe for concurrent use. Until
// someone asks for Done, ending it is one atomic swap, without the lock.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time
	state    atomic.Uint32 // ctxLive, ctxCanceled or ctxExpired, with ctxArmed once Done was asked

	mu    sync.Mutex // held to arm, and to end once armed
	done  chan struct{}
	timer *time.Timer
}

const (
	ctxLive uint32 = iota
	ctxCanceled
	ctxExpired
	ctxEnded = 3 // the bits of ctxCanceled and ctxExpired
	ctxArmed = 4 // done is made: ending closes it
)

func (c *lazyDeadline) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *lazyDeadline) Value(key any) any { return c.parent.Value(key) }

// Done returns a channel closed at the deadline or on release, arming the
// timer on first use.
func (c *lazyDeadline) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	for {
		st := c.state.Load()
		switch {
		case st&ctxEnded != 0:
			c.state.Store(st | ctxArmed)
			close(c.done)
			return c.done
		case !time.Now().Before(c.deadline):
			if c.state.CompareAndSwap(st, ctxExpired|ctxArmed) {
				close(c.done)
				return c.done
			}
		case c.state.CompareAndSwap(st, st|ctxArmed):
			c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(ctxExpired) })
			return c.done
		}
	}
}

// Err is nil until the deadline passes or the context is released.
func (c *lazyDeadline) Err() error {
	st := c.state.Load()
	if st&ctxEnded == 0 && !time.Now().Before(c.deadline) {
		c.end(ctxExpired)
		st = c.state.Load()
	}
	switch st & ctxEnded {
	case ctxCanceled:
		return context.Canceled
	case ctxExpired:
		return context.DeadlineExceeded
	}
	return nil
}

// end ends the context with why (ctxCanceled or ctxExpired) unless it has
// ended already.
func (c *lazyDeadline) end(why uint32) {
	if c.state.CompareAndSwap(ctxLive, why) {
		return // nobody asked for Done: no channel to close, no timer to stop
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state.Load()
	if st&ctxEnded != 0 {
		return
	}
	// Armed (a live, unarmed context was swapped above): Done made the
	// channel under mu, which is held.
	c.state.Store(why | ctxArmed)
	close(c.done)
	if c.timer != nil {
		c.timer.Stop()
	}
}
