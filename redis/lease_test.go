package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
)

// Two hosts share the circuit through one Redis: host a's probe outlives its
// lease, host b probes once more and fails, and a's late success is dropped
// by the generation check instead of closing the circuit b reopened.
func TestALeaseExpiringBeforeItsProbeEnds(t *testing.T) {
	srv := redistest.Start(t)
	clk := testenv.NewClock(breaker.Instant{Wall: time.Now()})
	p := fusebox.Policy{
		Retry:   fusebox.RetryPolicy{Attempts: 1},
		Breaker: breaker.Policy{TripAfter: 1, OpenFor: time.Minute, Probes: 1, ProbeLease: 10 * time.Second},
	}.WithDefaults()
	host := func() *fusebox.Circuits {
		s := open(t, srv, redis.WithPrefix("lease-probe:"))
		t.Cleanup(func() { s.Close() })
		return fusebox.New(s, fusebox.WithClock(clk), fusebox.WithPolicy(p))
	}
	a, b := host(), host()
	down := errors.New("bridge down")
	if err := a.Do(ctx, "bridge", func(context.Context) error { return down }); !errors.Is(err, down) {
		t.Fatalf("tripping call = %v", err)
	}
	clk.Advance(time.Minute + time.Second) // half-open

	var bErr, cErr error
	probes := 0
	err := a.Do(ctx, "bridge", func(context.Context) error {
		probes++
		clk.Advance(11 * time.Second) // a's lease is over; a is still probing
		bErr = b.Do(ctx, "bridge", func(context.Context) error { probes++; return down })
		cErr = b.Do(ctx, "bridge", func(context.Context) error { probes++; return nil })
		return nil // a's success, late
	})
	if err != nil {
		t.Fatalf("a's probe = %v, want its own success", err)
	}
	if probes != 2 || !errors.Is(cErr, breaker.ErrOpen) || bErr == nil || errors.Is(bErr, breaker.ErrOpen) {
		t.Errorf("%d probes ran (b: %v, c: %v); want a's and exactly one more, b's, failing, and c skipped", probes, bErr, cErr)
	}
	if err := a.Do(ctx, "bridge", func(context.Context) error { probes++; return nil }); !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("after a's late success: Do = %v; want the circuit b reopened still open", err)
	}
}
