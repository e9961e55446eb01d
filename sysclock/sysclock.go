// Package sysclock is the fusebox.Clock of a real machine: the wall clock
// plus the system's boot ID and a clock that counts time since boot
// (suspend included) and never jumps when NTP corrects the wall clock —
// Linux's boot_id and CLOCK_BOOTTIME, macOS's boot session UUID and
// CLOCK_MONOTONIC. Elsewhere (FreeBSD) it is the wall clock alone: see
// boot_other.go.
package sysclock

import (
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

var _ fusebox.Clock = Clock{}

// Clock reads the system clocks. It is safe for concurrent use. Where the boot
// ID or the boot clock cannot be read, it degrades to the wall clock alone.
type Clock struct{}

// Now returns the wall time with the boot clock's reading.
func (Clock) Now() breaker.Instant {
	now := breaker.Instant{Wall: time.Now()}
	id := bootID()
	if id == "" {
		return now
	}
	since, ok := bootTime()
	if !ok {
		return now
	}
	now.Boot = id
	now.BootTime = since
	return now
}
