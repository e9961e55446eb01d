package serve_test

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now fusebox.Instant
}

func (c *fakeClock) Now() fusebox.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
