package fusebox_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/mem"
)

// countingStore counts the Updates a Store is asked for.
type countingStore struct {
	fusebox.Store
	updates int
}

func (s *countingStore) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	s.updates++
	return s.Store.Update(ctx, name, fn)
}

func TestWatchedWritesOnlyTransitions(t *testing.T) {
	m := mem.New()
	store := &countingStore{Store: m}
	c := fusebox.New(store)
	ctx := context.Background()
	p := fusebox.Policy{}.WithDefaults().Breaker
	for i, step := range []struct {
		up      bool
		changed bool
		phase   breaker.Phase
	}{
		{false, true, breaker.Open},
		{false, false, breaker.Open},
		{true, true, breaker.Closed},
		{true, false, breaker.Closed},
	} {
		v, changed, err := c.Watched(ctx, "bridge", p, step.up, "mqtt bridge: judged")
		if err != nil || changed != step.changed || v.Phase != step.phase {
			t.Fatalf("verdict %d (up %v): %v changed %v, err %v; want %s changed %v", i, step.up, v.Phase, changed, err, step.phase, step.changed)
		}
	}
	if store.updates != 2 {
		t.Errorf("%d updates for two transitions and two repeated verdicts, want 2", store.updates)
	}
	events, err := m.Events(ctx, "bridge", time.Time{})
	if err != nil || len(events) != 3 {
		t.Fatalf("events %+v (%v), want the failure, the opening and the closing", events, err)
	}
}
