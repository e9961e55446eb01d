package fusebox_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// A transition records the circuit's skip total as it was just before it,
// so that the skips of an open period are the difference between its
// opening and its closing.
func TestTransitionsCarryTheSkipTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, doPolicy(), nil)
		e.c.Do(ctx, "api", fails(errRefused, errRefused, errRefused).fn)
		for range 4 {
			e.c.Do(ctx, "api", fails(nil).fn) // skipped
		}
		time.Sleep(30 * time.Second)
		if err := e.c.Do(ctx, "api", fails(nil).fn); err != nil {
			t.Fatal(err)
		}
		events, err := e.mem.Events(ctx, "api", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, ev := range events {
			if ev.Kind == breaker.EventTransition {
				got = append(got, ev.Skips)
			}
		}
		if len(got) != 2 || got[0] != 0 || got[1] != 4 {
			t.Errorf("skip totals at the opening and the closing = %v, want [0 4]", got)
		}
	})
}
