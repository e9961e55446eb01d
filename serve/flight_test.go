package serve_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// gate is an upstream that holds every request until released, echoing its
// method, path, query and body.
type gate struct {
	*httptest.Server
	hits    atomic.Int64
	arrived chan struct{}
	release chan struct{}
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{arrived: make(chan struct{}, 100), release: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		g.arrived <- struct{}{}
		select {
		case <-g.release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "%s %s ?%s body=%s", r.Method, r.URL.Path, r.URL.RawQuery, b)
	}))
	t.Cleanup(func() {
		g.CloseClientConnections()
		g.Close()
	})
	return g
}

// wait waits for a request to arrive, failing the test after a while.
func (g *gate) wait(t testing.TB) {
	t.Helper()
	select {
	case <-g.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no request reached the upstream")
	}
}

// sharing returns how many callers wait for a call's answer (a shared
// GET's, whether their own goroutine runs it or another's): singleflight
// keeps no count, so they are found as goleak finds goroutines, by their
// stacks: a handler waiting in its select for the answer or its deadline.
func sharing() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(" [select")) && bytes.Contains(g, []byte("fusebox/serve.(*Server).handleCall(")) {
			n++
		}
	}
	return n
}

// open lets every request through from now on.
func (g *gate) open() { close(g.release) }

func TestCallersAtTheSameMomentShareOneUpstreamCall(t *testing.T) {
	g := newGate(t)
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("slow", g.URL)}}, serve.Options{})
	const n = 8
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Go(func() { replies[i] = d.get(t, "/call/slow") })
	}
	g.wait(t)
	testenv.WaitFor(t, "every caller to join the call under way", func() bool { return sharing() == n })
	g.open()
	wg.Wait()
	if h := g.hits.Load(); h != 1 {
		t.Fatalf("%d callers made %d upstream requests, want 1", n, h)
	}
	shared := 0
	for _, r := range replies {
		if r.code != 200 || r.body != "GET / ? body=" {
			t.Errorf("a caller got %d %q", r.code, r.body)
		}
		if r.header.Get(serve.HeaderShared) == "true" {
			shared++
		}
	}
	if shared != n-1 {
		t.Errorf("%d answers marked shared, want %d", shared, n-1)
	}
	// Once done, the next caller calls anew.
	if r := d.get(t, "/call/slow"); r.code != 200 || g.hits.Load() != 2 {
		t.Errorf("a later call: %d, %d requests", r.code, g.hits.Load())
	}
}

func TestPostsAreNotShared(t *testing.T) {
	g := newGate(t)
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("hook", g.URL)}}, serve.Options{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { d.do(t, "POST", "/call/hook") })
	}
	for range 3 {
		g.wait(t) // each POST reached the upstream on its own
	}
	g.open()
	wg.Wait()
}

func TestMaxInFlightAgainstAHangingUpstream(t *testing.T) {
	g := newGate(t)
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{
			endpoint("hang", g.URL, func(e *httpcall.Endpoint) { e.MaxInFlight = 2; e.Method = "POST" }),
			endpoint("other", newUpstream(t, "other").URL),
		},
		Chains: []*httpcall.Chain{{Name: "via", Endpoints: []string{"hang", "other"}}},
	}, serve.Options{})
	var wg sync.WaitGroup
	held := make([]reply, 2)
	for i := range 2 {
		wg.Go(func() { held[i] = d.do(t, "POST", "/call/hang") })
	}
	g.wait(t)
	g.wait(t)

	// The third is refused at once, the upstream untouched; a chain through
	// the same endpoint too; other endpoints still answer.
	began := time.Now()
	r := d.do(t, "POST", "/call/hang")
	if r.code != 503 || r.header.Get("Retry-After") != "1" || !strings.Contains(r.body, "max_in_flight") {
		t.Fatalf("past max_in_flight: %d %q Retry-After %q", r.code, r.body, r.header.Get("Retry-After"))
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the refusal took %s; it must not wait for the upstream", took)
	}
	if r := d.do(t, "POST", "/call/via"); r.code != 503 {
		t.Errorf("a chain through the full endpoint: %d", r.code)
	}
	if r := d.get(t, "/call/other"); r.code != 200 {
		t.Errorf("another endpoint: %d", r.code)
	}
	if h := g.hits.Load(); h != 2 {
		t.Errorf("upstream hits %d, want 2", h)
	}
	g.open()
	wg.Wait()
	for _, r := range held {
		if r.code != 200 {
			t.Errorf("a held call: %d", r.code)
		}
	}
	if r := d.do(t, "POST", "/call/hang"); r.code != 200 {
		t.Errorf("after the upstream answered: %d", r.code)
	}
}

func TestRequestPartsPassOnlyWhereAllowed(t *testing.T) {
	g := newGate(t)
	g.open()
	allow := func(e *httpcall.Endpoint) { e.AllowSubpath, e.PassQuery, e.PassBody = true, true, true }
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("ha", g.URL+"/api?token=cfg", allow, func(e *httpcall.Endpoint) { e.Method = "POST" }),
		endpoint("ha-get", g.URL+"/api", allow),
		endpoint("closed", g.URL+"/fixed?a=1", func(e *httpcall.Endpoint) { e.Method = "POST" }),
	}}, serve.Options{})

	post := func(path, body string) reply {
		return d.do(t, "POST", path, func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(body))
			r.ContentLength = int64(len(body))
		})
	}
	for _, c := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"subpath, query and body", "/call/ha/states/sensor.x?since=1h", `{"state":"on"}`, 200, `POST /api/states/sensor.x ?token=cfg&since=1h body={"state":"on"}`},
		{"no parts: the config's", "/call/ha", "", 200, "POST /api ?token=cfg body="},
		{"a config parameter cannot be overridden", "/call/ha?token=mine", "", 403, "set by the config"},
		{"subpath not allowed", "/call/closed/x", "", 403, "allow_subpath"},
		{"query not allowed", "/call/closed?b=2", "", 403, "pass_query"},
		{"body not allowed", "/call/closed", "data", 403, "pass_body"},
		{"plain call of the closed endpoint", "/call/closed", "", 200, "POST /fixed ?a=1 body="},
	} {
		r := post(c.path, c.body)
		if r.code != c.code || !strings.Contains(r.body, c.want) {
			t.Errorf("%s: POST %s: %d %q, want %d with %q", c.name, c.path, r.code, r.body, c.code, c.want)
		}
	}
	// GETs with different subpaths are different calls.
	if r := d.get(t, "/call/ha-get/states/sensor.y"); r.code != 200 || !strings.Contains(r.body, "GET /api/states/sensor.y ") {
		t.Errorf("GET subpath: %d %q", r.code, r.body)
	}
}
