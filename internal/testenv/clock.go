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
	c.now = After(c.now, d)
}

// After returns i moved forward by d on every clock it carries: what a
// machine's clock reads d later within the same boot.
func After(i breaker.Instant, d time.Duration) breaker.Instant {
	i.Wall = i.Wall.Add(d)
	if i.Boot != "" {
		i.BootTime += d
	}
	return i
}
