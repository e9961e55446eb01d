package fusebox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

// bubbleBootClock is a boot-aware clock on a synctest bubble's fake time.
type bubbleBootClock struct{ start time.Time }

func (c bubbleBootClock) Now() breaker.Instant {
	return breaker.Instant{Wall: time.Now(), Boot: "boot-a", BootTime: 3*time.Hour + time.Since(c.start)}
}

// TestDoKeepsALeaseRebasedFromTheFuture: a probe lease stored an hour ahead
// of both clocks (a process whose clocks were ahead took it, then died) is
// rebased by the first call under the lock, and that rebase is stored even
// though the number of leases did not change; so the lease ends its length
// after that first call instead of restarting at every call.
func TestDoKeepsALeaseRebasedFromTheFuture(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := bubbleBootClock{start: time.Now()}
		store := mem.New()
		p := doPolicy()
		p.Breaker.Probes, p.Breaker.ProbeLease = 1, 12*time.Second
		now := clock.Now()
		if _, err := store.Update(context.Background(), "api", func(st *breaker.State) ([]breaker.Event, bool) {
			st.Phase, st.Generation = breaker.Open, 1
			st.OpenedAt, st.OpenPeriod = testenv.After(now, -time.Hour), breaker.Duration(time.Second)
			st.Probes = []breaker.Lease{{ID: "dead", Granted: testenv.After(now, time.Hour), For: breaker.Duration(12 * time.Second)}}
			return nil, true
		}); err != nil {
			t.Fatal(err)
		}
		c := fusebox.New(store, fusebox.WithPolicy(p), fusebox.WithClock(clock))
		ran := false
		for elapsed := time.Duration(0); elapsed <= 15*time.Second; elapsed += 5 * time.Second {
			err := c.Do(context.Background(), "api", func(context.Context) error { ran = true; return nil })
			if ran {
				if elapsed < 12*time.Second {
					t.Fatalf("the lease ended %s after the first call, before its 12s", elapsed)
				}
				return
			}
			if !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("Do = %v; want refused while the lease holds", err)
			}
			time.Sleep(5 * time.Second)
		}
		st, _ := store.Load(context.Background(), "api")
		t.Fatalf("the lease taken an hour ahead still holds 20s after the first call: %+v", st.Probes)
	})
}
