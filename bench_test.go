package fusebox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
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
// Load, the OpenError and one Count. "opened" is a circuit its failures
// opened (as the bench module's library case has it), "tripped" one forced
// open by hand.
func BenchmarkDoOpen(b *testing.B) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	for _, how := range []string{"opened", "tripped"} {
		b.Run(how, func(b *testing.B) {
			c := openCircuits(b, how)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Do(ctx, "bench", ok); err == nil {
					b.Fatal("Do on an open circuit succeeded")
				}
			}
		})
	}
}

// openCircuits returns Circuits whose circuit "bench" is open, opened by a
// failure or tripped by hand.
func openCircuits(tb testing.TB, how string) *fusebox.Circuits {
	tb.Helper()
	ctx := context.Background()
	c := fusebox.New(mem.New(), fusebox.WithPolicy(fusebox.Policy{
		Retry:   fusebox.RetryPolicy{Attempts: 1},
		Breaker: breaker.Policy{TripAfter: 1, OpenFor: time.Hour},
	}))
	if how == "tripped" {
		if _, err := c.Trip(ctx, "bench", 0, ""); err != nil {
			tb.Fatal(err)
		}
		return c
	}
	c.Do(ctx, "bench", func(context.Context) error { return errors.New("refused") })
	if err := c.Do(ctx, "bench", func(context.Context) error { return nil }); !errors.Is(err, breaker.ErrOpen) {
		tb.Fatalf("after a failure with TripAfter 1: %v, want the circuit open", err)
	}
	return c
}

// The allocations of a call are counted, not timed, so this is a test. A
// successful Do on the in-memory store allocates nothing when there is no
// deadline (Timeout and Deadline NoDeadline, a caller's context that never
// ends). Under a caller's deadline sooner than its own, the attempt runs with
// the caller's context, and the call allocates once: the outcome is recorded
// under context.WithoutCancel, whether or not the caller has gone. Otherwise
// it allocates only its attempt's context (what context.WithDeadline costs).
// A skipped call allocates once (the OpenError). The race detector's instrumentation allocates on its
// own, so it is not counted there.
func TestDoAllocations(t *testing.T) {
	if raceEnabled {
		t.Log("not counted under the race detector")
		return
	}
	ctx := context.Background()
	ok := func(context.Context) error { return nil }
	none := fusebox.New(mem.New(), fusebox.WithPolicy(fusebox.Policy{
		Retry: fusebox.RetryPolicy{Timeout: fusebox.NoDeadline, Deadline: fusebox.NoDeadline},
	}))
	if n := testing.AllocsPerRun(200, func() { none.Do(ctx, "healthy", ok) }); n != 0 {
		t.Errorf("a successful Do without a deadline allocates %.0f times, want 0", n)
	}
	callers, cancel := context.WithTimeout(ctx, time.Second) // sooner than the default timeout
	defer cancel()
	c := fusebox.New(mem.New())
	if n := testing.AllocsPerRun(200, func() { c.Do(callers, "healthy", ok) }); n > 1 {
		t.Errorf("a successful Do under the caller's sooner deadline allocates %.0f times, want at most 1", n)
	}
	attemptCtx := testing.AllocsPerRun(200, func() {
		_, cancel := context.WithDeadline(ctx, time.Now().Add(time.Minute))
		cancel()
	})
	if n := testing.AllocsPerRun(200, func() { c.Do(ctx, "healthy", ok) }); n > attemptCtx {
		t.Errorf("a successful Do with the default timeout allocates %.0f times, want at most the %.0f of its attempt's context", n, attemptCtx)
	}
	for _, how := range []string{"opened", "tripped"} {
		c := openCircuits(t, how)
		if n := testing.AllocsPerRun(200, func() { c.Do(ctx, "bench", ok) }); n > 1 {
			t.Errorf("a Do skipped on a circuit %s allocates %.0f times, want at most 1", how, n)
		}
	}
}
