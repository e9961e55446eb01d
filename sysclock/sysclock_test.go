package sysclock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestNowCarriesBootClock(t *testing.T) {
	a := Clock{}.Now()
	if a.Boot == "" {
		testenv.Skip(t, "no boot ID on this system (%s); the clock degrades to wall time", bootIDPath)
	}
	if a.BootTime <= 0 {
		t.Fatalf("BootTime = %v, want > 0", a.BootTime)
	}
	time.Sleep(2 * time.Millisecond)
	b := Clock{}.Now()
	d, ok := b.Since(a)
	if !ok || d < 2*time.Millisecond || d > time.Second {
		t.Fatalf("Since = %v, %v; want about 2ms measured on the boot clock", d, ok)
	}
}

// BenchmarkNow is the clock read on every call (twice); the daemon makes it
// for each request it answers.
func BenchmarkNow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Clock{}.Now()
	}
}

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
		testenv.Skip(t, "no boot ID on this system (%s)", bootIDPath)
	}
	if now.BootTime < time.Duration(before.Nano()) || now.BootTime > time.Duration(after.Nano()) {
		t.Fatalf("BootTime %v, not between %v and %v", now.BootTime, time.Duration(before.Nano()), time.Duration(after.Nano()))
	}
}
