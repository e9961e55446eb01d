package fusebox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// A health check (Circuits.Probe) may probe an open circuit before its open
// period ends, under the probe lease every caller shares.
func TestProbeOfAnOpenCircuit(t *testing.T) {
	t.Run("a success closes the circuit before its open period ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			e.open("api")
			time.Sleep(5 * time.Second) // 25s of the 30s open period left
			if err := e.c.Probe(context.Background(), "api", fails(nil).fn); err != nil {
				t.Fatalf("Probe = %v", err)
			}
			if v := e.view("api"); v.Phase != breaker.Closed {
				t.Errorf("after a passed health check: %+v, want closed", v)
			}
			if got := e.log.Lines("circuit closed", "health check succeeded"); len(got) != 1 {
				t.Errorf("want the closing logged with its reason; log:\n%s", e.log)
			}
		})
	})
	t.Run("a failure leaves the open period as it was", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			e.open("api")
			time.Sleep(5 * time.Second)
			before := e.state("api")
			err := e.c.Probe(context.Background(), "api", fails(errRefused).fn)
			var ex *fusebox.ExhaustedError
			if !errors.As(err, &ex) || ex.Attempts != 1 {
				t.Fatalf("Probe = %v, want one failed attempt", err)
			}
			after := e.state("api")
			if v := e.view("api"); v.Phase != breaker.Open || v.ReopensIn != 25*time.Second ||
				after.Generation != before.Generation || after.Reopens != before.Reopens || len(after.Probes) != 0 {
				t.Errorf("after a failed health check: %+v, state %+v; want open, 25s left, lease given back", v, after)
			}
			if e.skips("api") != 0 {
				t.Error("a health check counted a skip")
			}
		})
	})
	t.Run("it holds the probe lease: a second probe and ordinary calls are refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			e.open("api")
			inside := make(chan struct{})
			release := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- e.c.Probe(context.Background(), "api", func(context.Context) error {
					close(inside)
					<-release
					return nil
				})
			}()
			<-inside
			if err := e.c.Probe(context.Background(), "api", fails(nil).fn); !errors.Is(err, breaker.ErrOpen) {
				t.Errorf("a second health check = %v, want ErrOpen (probing)", err)
			}
			if err := e.circuits(doPolicy()).Do(context.Background(), "api", fails(nil).fn); !errors.Is(err, breaker.ErrOpen) {
				t.Errorf("an ordinary call during the health check = %v, want ErrOpen", err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatalf("Probe = %v", err)
			}
		})
	})
	t.Run("a circuit forced open is not probed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			if _, err := e.c.Trip(context.Background(), "api", time.Hour, ""); err != nil {
				t.Fatal(err)
			}
			s := fails(nil)
			if err := e.c.Probe(context.Background(), "api", s.fn); !errors.Is(err, breaker.ErrOpen) || s.called() != 0 {
				t.Errorf("Probe of a tripped circuit = %v, ran %d times; want ErrOpen and nothing run", err, s.called())
			}
		})
	})
	t.Run("on a closed circuit it is one ordinary attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			s := fails(errRefused, nil)
			if err := e.c.Probe(context.Background(), "api", s.fn); err == nil || s.called() != 1 {
				t.Errorf("Probe = %v after %d attempts, want one failed attempt", err, s.called())
			}
		})
	})
}
