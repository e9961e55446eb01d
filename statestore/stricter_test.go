package statestore

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestStricter(t *testing.T) {
	now := breaker.Instant{Wall: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	ago := func(d time.Duration) breaker.Instant { return testenv.After(now, -d) }
	closed := breaker.State{Phase: breaker.Closed, ConsecutiveFailures: 3}
	open := func(at breaker.Instant, d time.Duration) breaker.State {
		return breaker.State{Phase: breaker.Open, OpenedAt: at, OpenPeriod: breaker.Duration(d)}
	}
	trip := func(at breaker.Instant, d time.Duration) breaker.State {
		return breaker.State{Phase: breaker.ForcedOpen, OpenedAt: at, OpenPeriod: breaker.Duration(d)}
	}
	for _, c := range []struct {
		name string
		a, b breaker.State
		want bool
	}{
		{"an open circuit over a closed one", open(now, time.Minute), closed, true},
		{"a closed circuit over an open one", closed, open(now, time.Minute), false},
		{"a record over none", open(now, time.Minute), breaker.State{}, true},
		{"a half-open circuit over a closed one", open(ago(time.Hour), time.Minute), closed, true},
		{"an open period that ends later", open(now, time.Hour), open(now, time.Minute), true},
		{"an open period that ends sooner", open(now, time.Minute), open(ago(time.Second), time.Hour), false},
		{"a trip over an open circuit", trip(now, time.Minute), open(now, time.Hour), true},
		{"a trip until reset over a timed one", trip(ago(time.Hour), 0), trip(now, 24*time.Hour), true},
		{"a trip whose time is over, over an open circuit", trip(ago(time.Hour), time.Minute), open(now, time.Minute), false},
		{"two trips until reset", trip(now, 0), trip(ago(time.Hour), 0), false},
		{"two closed circuits", closed, breaker.State{Phase: breaker.Closed}, false},
		{"the same open state", open(now, time.Minute), open(now, time.Minute), false},
	} {
		if got := stricter(c.a, c.b, now); got != c.want {
			t.Errorf("%s: stricter = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAdoptBumpsTheGenerationPastBoth(t *testing.T) {
	local := breaker.State{Name: "api", Phase: breaker.Open, Generation: 3, Probes: []breaker.Lease{{ID: "x"}}}
	got := adopt(local, breaker.State{Name: "api", Generation: 7})
	if got.Generation != 8 || got.Probes != nil || got.Phase != breaker.Open {
		t.Errorf("adopt = generation %d, probes %v, phase %s; want 8, none, open", got.Generation, got.Probes, got.Phase)
	}
}
