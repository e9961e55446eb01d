package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// startServe runs `fusebox serve --listen 127.0.0.1:0` with the config at
// cfgPath and state in stateDir, and waits until it listens. It is killed
// when the test ends, if it is still running.
func startServe(t testing.TB, stateDir, cfgPath string, args ...string) *testenv.Daemon {
	t.Helper()
	return testenv.StartDaemon(t, fbCmd(stateDir, []string{"FUSEBOX_CONFIG=" + cfgPath}, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...))
}

// flaky is an upstream that answers 200, or 503 while down.
type flaky struct {
	*httptest.Server
	hits atomic.Int64
	down atomic.Bool
}

func newFlaky(t testing.TB) *flaky {
	f := &flaky{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		if f.down.Load() {
			http.Error(w, "down", 503)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(f.Close)
	return f
}

func writeConfigPath(t testing.TB, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func oneEndpointConfig(name, url string) string {
	return fmt.Sprintf(`circuits:
  %s:
    attempts: 1
    trip_after: 1
    open_for: 10m
    http:
      url: %s
`, name, url)
}

func TestServeSharesTheStateStoreWithTheCLI(t *testing.T) {
	up := newFlaky(t)
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, oneEndpointConfig("api", up.URL))
	d := startServe(t, state, cfg)
	env := []string{"FUSEBOX_CONFIG=" + cfg}

	if code, _, _ := d.Get(t, "/call/api"); code != 200 {
		t.Fatalf("daemon, upstream up: %d", code)
	}
	// A CLI call fails and trips the circuit: the daemon skips it too.
	up.down.Store(true)
	if p := inprocEnv(t, state, env, "call", "api"); p.Code != exitUnavailable {
		t.Fatalf("CLI call on a down upstream: exit %d: %s", p.Code, p.Stderr)
	}
	hits := up.hits.Load()
	code, h, body := d.Get(t, "/call/api")
	if code != 503 || !strings.Contains(body, `"skipped": true`) || h.Get("Retry-After") == "" {
		t.Fatalf("daemon after the CLI tripped it: %d %q Retry-After %q", code, body, h.Get("Retry-After"))
	}
	if up.hits.Load() != hits {
		t.Fatal("the daemon called an endpoint the CLI had tripped")
	}

	// The other way round: the daemon resets it, and the CLI calls again.
	up.down.Store(false)
	if code, _, body := d.Post(t, "/api/circuits/api/reset"); code != 200 {
		t.Fatalf("reset through the daemon: %d %s", code, body)
	}
	if p := inprocEnv(t, state, env, "call", "api"); p.Code != 0 {
		t.Fatalf("CLI after the daemon reset: exit %d: %s", p.Code, p.Stderr)
	}
	// The daemon's failure trips what the CLI then skips.
	up.down.Store(true)
	if code, _, _ := d.Get(t, "/call/api"); code != 503 {
		t.Fatalf("daemon, upstream down: %d", code)
	}
	if p := inprocEnv(t, state, env, "call", "api"); p.Code != exitOpen {
		t.Fatalf("CLI after the daemon tripped it: exit %d, want %d: %s", p.Code, exitOpen, p.Stderr)
	}
	// And what the CLI trips by hand, the daemon shows.
	if p := inprocEnv(t, state, env, "trip", "api"); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	if _, _, body := d.Get(t, "/api/circuits"); !strings.Contains(body, `"forced_open"`) {
		t.Fatalf("/api/circuits after a CLI trip: %s", body)
	}
}

// gate is an upstream that holds each request until released.
type gate struct {
	*httptest.Server
	arrived chan struct{}
	release chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.arrived <- struct{}{}
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "late but fine")
	}))
	t.Cleanup(func() {
		g.CloseClientConnections()
		g.Close()
	})
	return g
}

func TestServeSIGTERMLetsCallsInFlightFinish(t *testing.T) {
	up := newGate(t)
	base := t.TempDir()
	cfg := writeConfigPath(t, base, oneEndpointConfig("slow", up.URL))
	d := startServe(t, filepath.Join(base, "state"), cfg)

	type result struct {
		code int
		body string
		err  error
	}
	results := make(chan result, 3)
	// POSTs, so that the daemon shares no call between them: three calls
	// in flight.
	for range 3 {
		go func() {
			resp, err := http.Post("http://"+d.Addr+"/call/slow", "", nil)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			results <- result{code: resp.StatusCode, body: string(b)}
		}()
	}
	for range 3 {
		select {
		case <-up.arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("three calls did not reach the upstream")
		}
	}
	d.Signal(t, syscall.SIGTERM)
	// The daemon stops listening; then the upstream answers.
	testenv.WaitFor(t, "the listener to close", func() bool {
		c, err := http.Get("http://" + d.Addr + "/api/circuits")
		if err == nil {
			c.Body.Close()
		}
		return err != nil
	})
	close(up.release)
	for range 3 {
		var r result
		select {
		case r = <-results:
		case <-time.After(30 * time.Second):
			t.Fatal("a call in flight at SIGTERM never answered")
		}
		if r.err != nil || r.code != 200 || r.body != "late but fine" {
			t.Errorf("a call in flight at SIGTERM: %v %d %q", r.err, r.code, r.body)
		}
	}
	if code := d.Wait(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM: %s", code, d.Stderr)
	}
}

func TestServeSIGHUPReloadsUnderLoad(t *testing.T) {
	up := newFlaky(t)
	base := t.TempDir()
	cfg := writeConfigPath(t, base, oneEndpointConfig("one", up.URL))
	d := startServe(t, filepath.Join(base, "state"), cfg)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed, served atomic.Int64
	for range 4 {
		wg.Go(func() {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get("http://" + d.Addr + "/call/one")
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
				served.Add(1)
			}
		})
	}
	testenv.WaitFor(t, "load", func() bool { return served.Load() > 20 })

	// A bad config is refused, and the old one still served.
	writeConfigPath(t, base, oneEndpointConfig("one", up.URL)+"    bogus_key: 1\n")
	d.Signal(t, syscall.SIGHUP)
	testenv.WaitFor(t, "the refused reload", func() bool { return strings.Contains(d.Stderr.String(), "config not reloaded") })
	if !strings.Contains(d.Stderr.String(), "bogus_key") {
		t.Errorf("the reload error does not say why: %s", d.Stderr)
	}
	// A good one adds an endpoint.
	writeConfigPath(t, base, oneEndpointConfig("one", up.URL)+strings.TrimPrefix(oneEndpointConfig("two", up.URL), "circuits:\n"))
	d.Signal(t, syscall.SIGHUP)
	testenv.WaitFor(t, "the reload", func() bool { return strings.Contains(d.Stderr.String(), "config reloaded") })
	before := served.Load()
	testenv.WaitFor(t, "more load", func() bool { return served.Load() > before+20 })
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed across the reloads", n, served.Load())
	}
	if code, _, _ := d.Get(t, "/call/two"); code != 200 {
		t.Errorf("the reloaded config's new endpoint: %d", code)
	}
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, d.Stderr)
	}
}

func TestServeRefusesAnAddressOffLoopbackWithoutAToken(t *testing.T) {
	state := t.TempDir()
	p := inproc(t, state, "serve", "--listen", "0.0.0.0:0")
	if p.Code != exitUsage || !strings.Contains(p.Stderr, "token") {
		t.Fatalf("exit %d: %s", p.Code, p.Stderr)
	}
}

// A daemon started with no config file serves its API, over the circuits
// the state dir holds, and trips none it does not hold.
func TestServeWithoutAConfig(t *testing.T) {
	d := testenv.StartDaemon(t, fbCmd(t.TempDir(), nil, "serve", "--listen", "127.0.0.1:0"))
	if code, _, body := d.Get(t, "/api/circuits"); code != 200 {
		t.Fatalf("/api/circuits with no config: %d %s", code, body)
	}
	if code, _, body := d.Post(t, "/api/circuits/nas/trip"); code != http.StatusNotFound {
		t.Errorf("trip of a circuit no config or state has: %d %s, want 404", code, body)
	}
}
