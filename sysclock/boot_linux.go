package sysclock

import (
	"bytes"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BootIDPath is the file the boot ID is read from. A sandbox that hides it
// (systemd's ProcSubset=pid, an InaccessiblePaths= over /proc/sys) leaves
// the clock without the boot clock: every instant is then the wall
// clock's alone, which a machine without a real-time clock cannot trust.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// bootID is read with plain system calls: os.ReadFile would set up the
// runtime's poller for it (epoll_create, an eventfd and three epoll_ctl),
// which a fail-fast run otherwise need not.
var bootID = sync.OnceValue(func() string {
	fd, err := unix.Open(BootIDPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var buf [64]byte // a UUID and a newline
	n, err := unix.Read(fd, buf[:])
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf[:])
	}
	if err != nil || n <= 0 {
		return ""
	}
	return string(bytes.TrimSpace(buf[:n]))
})

// bootTime reads CLOCK_BOOTTIME: unix.ClockGettime, through RawSyscall, as
// clock_gettime never blocks, so the scheduler need not be told of it,
// which is a fifth of its cost.
func bootTime() (time.Duration, bool) {
	var ts unix.Timespec
	if _, _, errno := unix.RawSyscall(unix.SYS_CLOCK_GETTIME, unix.CLOCK_BOOTTIME, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
