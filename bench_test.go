package fusebox_test

import (
	"context"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
)

// BenchmarkDo measures the success path: a closed circuit in the in-memory
// store, one lock-free Load and one Update per call.
func BenchmarkDo(b *testing.B) {
	ok := func(context.Context) error { return nil }
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		c := fusebox.New(mem.New())
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Do(ctx, "bench", ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		c := fusebox.New(mem.New())
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := c.Do(ctx, "bench", ok); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkDoOpen measures a call skipped on an open circuit: one lock-free
// Load, the OpenError and one Count.
func BenchmarkDoOpen(b *testing.B) {
	ctx := context.Background()
	c := fusebox.New(mem.New())
	if _, err := c.Trip(ctx, "bench", 0); err != nil {
		b.Fatal(err)
	}
	ok := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Do(ctx, "bench", ok); err == nil {
			b.Fatal("Do on a tripped circuit succeeded")
		}
	}
}

// The allocations of a call are counted, not timed, so this is a test: a
// successful Do and a skipped one on the in-memory store allocate once (the
// attempt's context, the OpenError). The race detector's instrumentation
// allocates on its own, so it is not counted there.
func TestDoAllocatesOnce(t *testing.T) {
	if raceEnabled {
		t.Log("not counted under the race detector")
		return
	}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	c := fusebox.New(mem.New())
	if n := testing.AllocsPerRun(200, func() { c.Do(ctx, "healthy", ok) }); n > 1 {
		t.Errorf("a successful Do allocates %.0f times, want at most 1", n)
	}
	if _, err := c.Trip(ctx, "down", 0); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() { c.Do(ctx, "down", ok) }); n > 1 {
		t.Errorf("a Do skipped on an open circuit allocates %.0f times, want at most 1", n)
	}
}
