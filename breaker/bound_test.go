package breaker_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
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
	at := bootA.Add(time.Minute + time.Second)
	raw := st
	if permit, _, err := raw.Acquire(p, at, "probe"); err != nil || permit.Lease != "probe" {
		t.Fatalf("Acquire a minute on: %+v, %v; want the probe", permit, err)
	}
	if !st.BoundOpen(p) || time.Duration(st.OpenPeriod) != time.Minute || !st.OpenUntil.Equal(bootA.Wall.Add(time.Minute)) {
		t.Fatalf("BoundOpen: %s until %s, want a minute", time.Duration(st.OpenPeriod), st.OpenUntil)
	}
	if _, err := st.Decide(at); err != breaker.ErrNeedLock {
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

// A press trips for its period, but never shortens a trip in force.
func TestAPressNeverShortensATrip(t *testing.T) {
	for _, c := range []struct {
		name    string
		st      breaker.State
		changed bool
		want    time.Duration // the trip's period afterwards, 0: until reset
	}{
		{"tripped until reset", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: bootA}, false, 0},
		{"tripped for 2h", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: bootA, OpenPeriod: breaker.Duration(2 * time.Hour)}, false, 2 * time.Hour},
		{"tripped for exactly as long", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: bootA, OpenPeriod: breaker.Duration(time.Hour)}, false, time.Hour},
		{"tripped for 5m", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: bootA, OpenPeriod: breaker.Duration(5 * time.Minute)}, true, time.Hour},
		{"closed", breaker.State{Phase: breaker.Closed}, true, time.Hour},
		{"open", breaker.State{Phase: breaker.Open, OpenedAt: bootA, OpenPeriod: breaker.Duration(2 * time.Hour)}, true, time.Hour},
	} {
		st := c.st
		st.Name = "nas"
		events, changed := st.PressTrip(bootA, time.Hour, "MQTT")
		if changed != c.changed || (len(events) > 0) != c.changed {
			t.Errorf("%s: changed %v with %d events, want %v", c.name, changed, len(events), c.changed)
		}
		if st.Phase != breaker.ForcedOpen || time.Duration(st.OpenPeriod) != c.want {
			t.Errorf("%s: %s for %s after the press, want forced open for %s", c.name, st.Phase, time.Duration(st.OpenPeriod), c.want)
		}
	}
}
