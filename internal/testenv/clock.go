package testenv

import (
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Clock is a fusebox.Clock that moves only when a test says. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now breaker.Instant
}

// NewClock returns a Clock reading start until it is advanced.
func NewClock(start breaker.Instant) *Clock { return &Clock{now: start} }

func (c *Clock) Now() breaker.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
