package sysclock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The boot clock Now reads is the one unix.ClockGettime reads.
func TestNowReadsBootTime(t *testing.T) {
	var before, after unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &before); err != nil {
		testenv.Skip(t, "no CLOCK_BOOTTIME: %v", err)
	}
	now := Clock{}.Now()
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &after); err != nil {
		t.Fatal(err)
	}
	if now.Boot == "" {
		testenv.Skip(t, "no boot ID on this system (%s)", BootIDPath)
	}
	if now.BootTime < time.Duration(before.Nano()) || now.BootTime > time.Duration(after.Nano()) {
		t.Fatalf("BootTime %v, not between %v and %v", now.BootTime, time.Duration(before.Nano()), time.Duration(after.Nano()))
	}
}
