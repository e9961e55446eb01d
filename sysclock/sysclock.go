// Package sysclock is the fusebox.Clock of a real machine: the wall clock
// plus Linux's boot ID and CLOCK_BOOTTIME, which counts time since boot
// (suspend included) and never jumps when NTP corrects the wall clock.
package sysclock

import (
	"bytes"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
)

const bootIDPath = "/proc/sys/kernel/random/boot_id"

var _ fusebox.Clock = Clock{}

// Clock reads the system clocks. It is safe for concurrent use. Where the boot
// ID or CLOCK_BOOTTIME cannot be read, it degrades to the wall clock alone.
type Clock struct{}

var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
})

// Now returns the wall time with the boot clock's reading.
func (Clock) Now() fusebox.Instant {
	now := fusebox.Instant{Wall: time.Now()}
	id := bootID()
	if id == "" {
		return now
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return now
	}
	now.Boot = id
	now.BootTime = time.Duration(ts.Nano())
	return now
}
