package fusebox

import (
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Clock tells the time. Implementations must be safe for concurrent use.
type Clock interface {
	Now() breaker.Instant
}

// WallClock is a Clock that knows only the wall clock. It is the default; the
// sysclock package adds the boot clock.
type WallClock struct{}

// Now returns the wall time.
func (WallClock) Now() breaker.Instant { return breaker.Instant{Wall: time.Now()} }
