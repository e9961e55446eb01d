package fusebox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// A circuit another writer stored open for 876000h (a century) is open
// for open_max at most, as this process's policy says: Check and Do skip
// it until then, and the call after it is the probe that closes it.
func TestAStoredCenturyOpenLastsOpenMaxAtMost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := doPolicy() // open_for 30s, open_max 5m by default
		e := newEnv(t, p, nil)
		century := 876000 * time.Hour
		now := time.Now()
		if _, err := e.mem.Update(context.Background(), "api", func(st *breaker.State) ([]breaker.Event, bool) {
			st.Phase, st.Generation = breaker.Open, 7
			st.OpenedAt, st.OpenPeriod, st.OpenUntil = breaker.Instant{Wall: now}, breaker.Duration(century), now.Add(century)
			return nil, true
		}); err != nil {
			t.Fatal(err)
		}
		ran := 0
		call := func(context.Context) error { ran++; return nil }
		if err := e.c.Do(context.Background(), "api", call); !errors.Is(err, breaker.ErrOpen) || ran != 0 {
			t.Fatalf("Do at once: %v (ran %d), want skipped", err, ran)
		}
		time.Sleep(p.Breaker.OpenMax - time.Second)
		if err := e.c.Do(context.Background(), "api", call); !errors.Is(err, breaker.ErrOpen) || ran != 0 {
			t.Fatalf("Do within open_max: %v (ran %d), want skipped", err, ran)
		}
		if st := e.state("api"); time.Duration(st.OpenPeriod) != p.Breaker.OpenMax {
			t.Errorf("stored after a call: open for %s, want the bound (%s) stored, as status shows it", time.Duration(st.OpenPeriod), p.Breaker.OpenMax)
		}
		time.Sleep(2 * time.Second)
		if err := e.c.Do(context.Background(), "api", call); err != nil || ran != 1 {
			t.Fatalf("Do past open_max: %v (ran %d), want the probe run", err, ran)
		}
		if v := e.view("api"); v.Phase != breaker.Closed {
			t.Errorf("after the probe: %s, want closed", v.Phase)
		}
	})
}
