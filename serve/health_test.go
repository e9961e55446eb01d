package serve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// service is an upstream with a data path and a health path, each counted.
type service struct {
	*httptest.Server
	data, health atomic.Int64
	down         atomic.Bool
	hold         chan struct{} // when not nil, /health waits on it
}

func newService(t *testing.T, hold chan struct{}) *service {
	t.Helper()
	s := &service{hold: hold}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/data":
			s.data.Add(1)
		case "/health":
			s.health.Add(1)
			if s.hold != nil {
				select {
				case <-s.hold:
				case <-r.Context().Done():
					return
				}
			}
		default:
			http.NotFound(w, r)
			return
		}
		if s.down.Load() {
			http.Error(w, "down", 503)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

// state returns the circuit's state as /api/circuits shows it.
func (d *daemon) state(t *testing.T, name string) string {
	t.Helper()
	rows, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Name == name {
			return r.State
		}
	}
	return ""
}

func withHealth(path string) func(*httpcall.Endpoint) {
	return func(e *httpcall.Endpoint) {
		e.Health = &httpcall.Health{Path: path, Interval: 5 * time.Millisecond, Expect: httpcall.Expect{Status: []int{200}}}
	}
}

func TestHealthCheckClosesACircuitWithoutAnyCaller(t *testing.T) {
	svc := newService(t, nil)
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("api", svc.URL+"/data?key=1", withHealth("/health")),
	}}, serve.Options{Clock: clk})

	svc.down.Store(true)
	if r := d.get(t, "/call/api"); r.code != 503 {
		t.Fatalf("down: %d", r.code)
	}
	if got := d.state(t, "api"); got != "open" {
		t.Fatalf("state %q, want open", got)
	}
	svc.down.Store(false)
	// While the circuit is open, the health check leaves it alone.
	healthBefore := svc.health.Load()
	clk.Advance(30 * time.Second)
	if got := d.state(t, "api"); got != "open" {
		t.Fatalf("state %q mid-period, want open", got)
	}
	// Once the breaker would let a probe through, the daemon probes by
	// itself, on the health path, and the circuit closes.
	clk.Advance(31 * time.Second)
	dataBefore := svc.data.Load()
	testenv.WaitFor(t, "the health check to close the circuit", func() bool { return d.state(t, "api") == "closed" })
	if svc.health.Load() == healthBefore {
		t.Error("closed without a request to the health path")
	}
	if svc.data.Load() != dataBefore {
		t.Error("the health check called the data path")
	}
}

func TestHealthCheckOfTheEndpointItself(t *testing.T) {
	svc := newService(t, nil)
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("api", svc.URL+"/data", func(e *httpcall.Endpoint) {
			e.Health = &httpcall.Health{Interval: 5 * time.Millisecond}
		}),
	}}, serve.Options{Clock: clk})
	svc.down.Store(true)
	d.get(t, "/call/api")
	svc.down.Store(false)
	before := svc.data.Load()
	clk.Advance(61 * time.Second)
	testenv.WaitFor(t, "the health check to close the circuit", func() bool { return d.state(t, "api") == "closed" })
	if svc.data.Load() <= before {
		t.Error("the endpoint itself was not probed")
	}
}

func TestHealthCheckTakesTheProbeLeaseOtherProcessesSee(t *testing.T) {
	hold := make(chan struct{})
	svc := newService(t, hold)
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("api", svc.URL+"/data", withHealth("/health")),
	}}, serve.Options{Clock: clk})
	svc.down.Store(true)
	d.get(t, "/call/api")
	svc.down.Store(false)
	// The daemon probes the open circuit at once, its open period not over.
	testenv.WaitFor(t, "the daemon's probe", func() bool { return svc.health.Load() == 1 })

	// A cron job on the same state dir is refused: the circuit is open and
	// the daemon holds its probe lease.
	cli, err := file.Open(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ran := false
	err = fusebox.New(cli, fusebox.WithPolicy(fastPolicy()), fusebox.WithClock(clk)).Do(context.Background(), "api",
		func(context.Context) error { ran = true; return nil })
	var oe *breaker.OpenError
	if !errors.As(err, &oe) || ran {
		t.Fatalf("another process during the daemon's probe: %v (ran %v), want ErrOpen", err, ran)
	}
	if st, _ := cli.Load(context.Background(), "api"); len(st.Probes) != 1 {
		t.Errorf("%d probe leases stored during the daemon's probe, want its 1", len(st.Probes))
	}
	close(hold)
	testenv.WaitFor(t, "the probe to close the circuit", func() bool { return d.state(t, "api") == "closed" })
	if n := svc.health.Load(); n != 1 {
		t.Errorf("%d probes, want 1: the lease lets one through", n)
	}
}

func TestHealthChecksFollowAReload(t *testing.T) {
	svc := newService(t, nil)
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("api", svc.URL+"/data")}}, serve.Options{Clock: clk})
	svc.down.Store(true)
	d.get(t, "/call/api")
	svc.down.Store(false)
	clk.Advance(61 * time.Second)
	// No health check configured: half-open, and nobody probes.
	if err := d.Reload(serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("api", svc.URL+"/data", withHealth("/health"))}}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the reloaded health check to close the circuit", func() bool { return d.state(t, "api") == "closed" })
}

// The daemon need not wait out the open period: its health check probes the
// open circuit on its own schedule and closes it as soon as the endpoint
// answers, with no caller and the clock not moved.
func TestHealthCheckClosesACircuitBeforeItsOpenPeriodEnds(t *testing.T) {
	svc := newService(t, nil)
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("api", svc.URL+"/data", withHealth("/health")),
	}}, serve.Options{Clock: clk})
	svc.down.Store(true)
	d.get(t, "/call/api")
	if got := d.state(t, "api"); got != "open" {
		t.Fatalf("after the failing call the circuit is %s, want open", got)
	}
	svc.down.Store(false)
	testenv.WaitFor(t, "the health check to close the circuit", func() bool { return d.state(t, "api") == "closed" })
}
