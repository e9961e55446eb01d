package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestWatchVerdicts(t *testing.T) {
	p := testBreaker() // OpenMax: a minute
	down := "mqtt bridge: .state == \"online\" is false"
	t.Run("down opens a closed circuit for open_max, recording the failure", func(t *testing.T) {
		st := breaker.State{Name: "api", Phase: breaker.Closed}
		events, changed := st.Watch(p, bootA, false, down)
		if !changed || st.Phase != breaker.Open || time.Duration(st.OpenPeriod) != time.Minute {
			t.Fatalf("changed %v, state %+v: want open for a minute", changed, st)
		}
		if len(events) != 2 || events[0].Kind != breaker.EventFailure || events[0].Cause != "watch" ||
			events[1].Kind != breaker.EventTransition || events[1].To != breaker.Open || events[1].Reason != down {
			t.Fatalf("events %+v: want the failure and the transition to open", events)
		}
		if st.LastFailure != down {
			t.Fatalf("last failure %q, want %q", st.LastFailure, down)
		}
	})
	t.Run("down again on an open circuit with time left changes nothing", func(t *testing.T) {
		st := breaker.State{Name: "api"}
		st.Watch(p, bootA, false, down)
		gen := st.Generation
		events, changed := st.Watch(p, testenv.After(bootA, 30*time.Second), false, down)
		if changed || len(events) != 0 || st.Generation != gen {
			t.Fatalf("changed %v, events %+v: want nothing to store", changed, events)
		}
	})
	t.Run("down near the end of the open period renews it without a transition", func(t *testing.T) {
		st := breaker.State{Name: "api"}
		st.Watch(p, bootA, false, down)
		gen := st.Generation
		now := testenv.After(bootA, 50*time.Second)
		events, changed := st.Watch(p, now, false, down)
		if v := st.View(now); !changed || len(events) != 0 || st.Generation != gen || v.ReopensIn != time.Minute {
			t.Fatalf("changed %v, events %+v, view %+v: want the period renewed quietly", changed, events, v)
		}
	})
	t.Run("down on a half-open circuit opens it again", func(t *testing.T) {
		st := breaker.State{Name: "api"}
		st.Watch(p, bootA, false, down)
		now := testenv.After(bootA, 2*time.Minute)
		events, changed := st.Watch(p, now, false, down)
		if v := st.View(now); !changed || v.Phase != breaker.Open || len(events) != 2 {
			t.Fatalf("changed %v, events %+v, view %+v: want it open again", changed, events, v)
		}
	})
	t.Run("down leaves a circuit tripped by hand", func(t *testing.T) {
		st := breaker.State{Name: "api"}
		st.Trip(bootA, 0, "")
		if events, changed := st.Watch(p, bootA, false, down); changed || len(events) != 0 || st.Phase != breaker.ForcedOpen {
			t.Fatalf("changed %v, events %+v, phase %s: want the trip kept", changed, events, st.Phase)
		}
		if events, changed := st.Watch(p, bootA, true, "up"); changed || len(events) != 0 || st.Phase != breaker.ForcedOpen {
			t.Fatalf("changed %v, events %+v, phase %s: want the trip kept", changed, events, st.Phase)
		}
	})
	t.Run("up closes an open circuit, and changes nothing on a closed one", func(t *testing.T) {
		st := breaker.State{Name: "api"}
		st.Watch(p, bootA, false, down)
		events, changed := st.Watch(p, testenv.After(bootA, time.Second), true, "mqtt bridge: up")
		if !changed || st.Phase != breaker.Closed || len(events) != 1 || events[0].To != breaker.Closed || st.ConsecutiveFailures != 0 {
			t.Fatalf("changed %v, events %+v, state %+v: want it closed", changed, events, st)
		}
		if events, changed := st.Watch(p, testenv.After(bootA, 2*time.Second), true, "up"); changed || len(events) != 0 {
			t.Fatalf("changed %v, events %+v: want nothing to store", changed, events)
		}
	})
}
