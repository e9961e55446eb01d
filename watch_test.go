package fusebox_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestWatchVerdicts(t *testing.T) {
	p := testBreaker() // OpenMax: a minute
	down := "mqtt bridge: .state == \"online\" is false"
	t.Run("down opens a closed circuit for open_max, recording the failure", func(t *testing.T) {
		st := fusebox.State{Name: "api", Phase: fusebox.Closed}
		events, changed := st.WatchDown(p, bootA, down)
		if !changed || st.Phase != fusebox.Open || time.Duration(st.OpenPeriod) != time.Minute {
			t.Fatalf("changed %v, state %+v: want open for a minute", changed, st)
		}
		if len(events) != 2 || events[0].Kind != fusebox.EventFailure || events[0].Cause != fusebox.CauseWatch ||
			events[1].Kind != fusebox.EventTransition || events[1].To != fusebox.Open || events[1].Reason != down {
			t.Fatalf("events %+v: want the failure and the transition to open", events)
		}
		if st.LastFailure != down {
			t.Fatalf("last failure %q, want %q", st.LastFailure, down)
		}
	})
	t.Run("down again on an open circuit with time left changes nothing", func(t *testing.T) {
		st := fusebox.State{Name: "api"}
		st.WatchDown(p, bootA, down)
		gen := st.Generation
		events, changed := st.WatchDown(p, bootA.Add(30*time.Second), down)
		if changed || len(events) != 0 || st.Generation != gen {
			t.Fatalf("changed %v, events %+v: want nothing to store", changed, events)
		}
	})
	t.Run("down near the end of the open period renews it without a transition", func(t *testing.T) {
		st := fusebox.State{Name: "api"}
		st.WatchDown(p, bootA, down)
		gen := st.Generation
		now := bootA.Add(50 * time.Second)
		events, changed := st.WatchDown(p, now, down)
		if v := st.View(now); !changed || len(events) != 0 || st.Generation != gen || v.ReopensIn != time.Minute {
			t.Fatalf("changed %v, events %+v, view %+v: want the period renewed quietly", changed, events, v)
		}
	})
	t.Run("down on a half-open circuit opens it again", func(t *testing.T) {
		st := fusebox.State{Name: "api"}
		st.WatchDown(p, bootA, down)
		now := bootA.Add(2 * time.Minute)
		events, changed := st.WatchDown(p, now, down)
		if v := st.View(now); !changed || v.Phase != fusebox.Open || len(events) != 2 {
			t.Fatalf("changed %v, events %+v, view %+v: want it open again", changed, events, v)
		}
	})
	t.Run("down leaves a circuit tripped by hand", func(t *testing.T) {
		st := fusebox.State{Name: "api"}
		st.Trip(bootA, 0)
		if events, changed := st.WatchDown(p, bootA, down); changed || len(events) != 0 || st.Phase != fusebox.ForcedOpen {
			t.Fatalf("changed %v, events %+v, phase %s: want the trip kept", changed, events, st.Phase)
		}
		if events, changed := st.WatchUp(bootA, "up"); changed || len(events) != 0 || st.Phase != fusebox.ForcedOpen {
			t.Fatalf("changed %v, events %+v, phase %s: want the trip kept", changed, events, st.Phase)
		}
	})
	t.Run("up closes an open circuit, and changes nothing on a closed one", func(t *testing.T) {
		st := fusebox.State{Name: "api"}
		st.WatchDown(p, bootA, down)
		events, changed := st.WatchUp(bootA.Add(time.Second), "mqtt bridge: up")
		if !changed || st.Phase != fusebox.Closed || len(events) != 1 || events[0].To != fusebox.Closed || st.ConsecutiveFailures != 0 {
			t.Fatalf("changed %v, events %+v, state %+v: want it closed", changed, events, st)
		}
		if events, changed := st.WatchUp(bootA.Add(2*time.Second), "up"); changed || len(events) != 0 {
			t.Fatalf("changed %v, events %+v: want nothing to store", changed, events)
		}
	})
}

// countingStore counts the Updates a Store is asked for.
type countingStore struct {
	fusebox.Store
	updates int
}

func (s *countingStore) Update(ctx context.Context, name string, fn func(*fusebox.State) ([]fusebox.Event, bool)) (fusebox.State, error) {
	s.updates++
	return s.Store.Update(ctx, name, fn)
}

func TestWatchedWritesOnlyTransitions(t *testing.T) {
	m := mem.New()
	store := &countingStore{Store: m}
	c := fusebox.New(store)
	ctx := context.Background()
	p := fusebox.DefaultPolicy().Breaker
	for i, step := range []struct {
		up      bool
		changed bool
		phase   fusebox.Phase
	}{
		{false, true, fusebox.Open},
		{false, false, fusebox.Open},
		{true, true, fusebox.Closed},
		{true, false, fusebox.Closed},
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
