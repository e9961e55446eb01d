package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// A state another writer stored (a host through a shared Redis, a person
// with an editor) with an open period of 876000h (a century) is bounded by
// the reader's open_max: the circuit is probed once open_max has passed.
// A trip is a person's: its period is kept.
func TestAStoredOpenPeriodIsBoundedByOpenMax(t *testing.T) {
	p := testBreaker() // open_max 1m
	century := 876000 * time.Hour
	st := breaker.State{Name: "api", Phase: breaker.Open, Generation: 4, OpenedAt: bootA,
		OpenPeriod: breaker.Duration(century), OpenUntil: bootA.Wall.Add(century)}
	at := testenv.After(bootA, time.Minute+time.Second)
	raw := st
	if permit, _, err := raw.Acquire(p, at, "probe", false); err != nil || permit.Lease != "probe" {
		t.Fatalf("Acquire a minute on: %+v, %v; want the probe", permit, err)
	}
	if !st.BoundOpen(p) || time.Duration(st.OpenPeriod) != time.Minute || !st.OpenUntil.Equal(bootA.Wall.Add(time.Minute)) {
		t.Fatalf("BoundOpen: %s until %s, want a minute", time.Duration(st.OpenPeriod), st.OpenUntil)
	}
	if _, err := st.Decide(at); !needsLock(err) {
		t.Fatalf("Decide a minute on, bounded: %v; want half-open (a probe under the lock)", err)
	}
	trip := breaker.State{Name: "nas", Phase: breaker.ForcedOpen, OpenedAt: bootA, OpenPeriod: breaker.Duration(century)}
	if trip.BoundOpen(p) || time.Duration(trip.OpenPeriod) != century {
		t.Errorf("a trip for a century was bounded to %s: a person's trip is theirs", time.Duration(trip.OpenPeriod))
	}
	short := breaker.State{Name: "api", Phase: breaker.Open, OpenedAt: bootA, OpenPeriod: breaker.Duration(30 * time.Second)}
	if short.BoundOpen(p) {
		t.Error("a period within open_max was changed")
	}
}
