package fusebox

import (
	"context"
	"sync"
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
		a.lazy.end(context.Canceled)
		return
	}
	a.cancel()
}

// lazyDeadline is a context with a deadline over a parent that is never
// cancelled (its Done is nil, so no ancestor holds a cancellation, and
// context.Cause falls back to Err). It is safe for concurrent use.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error
	timer *time.Timer
}

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
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.err = context.DeadlineExceeded
	}
	if c.err != nil {
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	return c.done
}

// Err is nil until the deadline passes or the context is released.
func (c *lazyDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

func (c *lazyDeadline) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.endLocked(err)
	}
}

func (c *lazyDeadline) endLocked(err error) {
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}
