package sysclock

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// bootID is the boot session's UUID (sysctl kern.bootsessionuuid), made
// afresh at every boot.
var bootID = sync.OnceValue(func() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
})

// bootTime reads CLOCK_MONOTONIC, which on macOS (unlike Linux's) goes on
// counting while the machine sleeps, as Linux's CLOCK_BOOTTIME does.
func bootTime() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
