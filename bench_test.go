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
