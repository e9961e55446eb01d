package fusebox_test

import (
	"context"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

// A press trips for its period, but never shortens a trip in force.
func TestAPressNeverShortensATrip(t *testing.T) {
	ctx := context.Background()
	now := breaker.Instant{Wall: time.Now(), Boot: "boot-a", BootTime: time.Hour}
	for _, c := range []struct {
		name    string
		st      breaker.State
		changed bool
		want    time.Duration // the trip's period afterwards, 0: until reset
	}{
		{"tripped until reset", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: now}, false, 0},
		{"tripped for 2h", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: now, OpenPeriod: breaker.Duration(2 * time.Hour)}, false, 2 * time.Hour},
		{"tripped for exactly as long", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: now, OpenPeriod: breaker.Duration(time.Hour)}, false, time.Hour},
		{"tripped for 5m", breaker.State{Phase: breaker.ForcedOpen, OpenedAt: now, OpenPeriod: breaker.Duration(5 * time.Minute)}, true, time.Hour},
		{"closed", breaker.State{Phase: breaker.Closed}, true, time.Hour},
		{"open", breaker.State{Phase: breaker.Open, OpenedAt: now, OpenPeriod: breaker.Duration(2 * time.Hour)}, true, time.Hour},
	} {
		m := mem.New()
		if _, err := m.Update(ctx, "nas", func(st *breaker.State) ([]breaker.Event, bool) {
			*st = c.st
			st.Name = "nas"
			return nil, true
		}); err != nil {
			t.Fatal(err)
		}
		circuits := fusebox.New(m, fusebox.WithClock(testenv.NewClock(now)))
		if _, err := circuits.PressTrip(ctx, "nas", time.Hour, "MQTT"); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st, err := m.Load(ctx, "nas")
		if err != nil {
			t.Fatal(err)
		}
		events, err := m.Events(ctx, "nas", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if changed := len(events) > 0; changed != c.changed {
			t.Errorf("%s: changed %v with %d events, want %v", c.name, changed, len(events), c.changed)
		}
		if st.Phase != breaker.ForcedOpen || time.Duration(st.OpenPeriod) != c.want {
			t.Errorf("%s: %s for %s after the press, want forced open for %s", c.name, st.Phase, time.Duration(st.OpenPeriod), c.want)
		}
	}
}
