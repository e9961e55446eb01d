package sysclock

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestNowCarriesBootClock(t *testing.T) {
	a := Clock{}.Now()
	if a.Boot == "" {
		testenv.Skip(t, "no boot ID on this system; the clock degrades to wall time")
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
