package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// upstream is a real HTTP server on loopback that answers 200 with its name,
// or 503 while down.
type upstream struct {
	*httptest.Server
	hits atomic.Int64
	down atomic.Bool
}

func newUpstream(t testing.TB, name string) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		if u.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", name)
		fmt.Fprintf(w, `{"from":%q,"temp":21.5}`, name)
	}))
	t.Cleanup(u.Close)
	return u
}

func TestChainFallsBackThroughTheDaemon(t *testing.T) {
	primary, backup := newUpstream(t, "primary"), newUpstream(t, "backup")
	primary.down.Store(true)
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{endpoint("primary", primary.URL), endpoint("backup", backup.URL)},
		Chains:    []*httpcall.Chain{{Name: "weather", Endpoints: []string{"primary", "backup"}}},
	}, serve.Options{})

	r := d.get(t, "/call/weather")
	if r.code != 200 || !strings.Contains(r.body, `"backup"`) {
		t.Fatalf("got %d %q, want backup's answer", r.code, r.body)
	}
	if got := r.header.Get(serve.HeaderSource); got != "backup" {
		t.Errorf("%s = %q, want backup", serve.HeaderSource, got)
	}
	if got := r.header.Get(serve.HeaderAttempts); got != "3" {
		t.Errorf("%s = %q, want 3 (2 on primary, 1 on backup)", serve.HeaderAttempts, got)
	}
	if got := r.header.Get("X-Upstream"); got != "backup" {
		t.Errorf("upstream header X-Upstream = %q, want it passed on", got)
	}
	if got := r.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}

	// primary's circuit is open now: the next call skips it without a request.
	before := primary.hits.Load()
	if r := d.get(t, "/call/weather"); r.code != 200 || r.header.Get(serve.HeaderAttempts) != "1" {
		t.Fatalf("second call: %d attempts %s", r.code, r.header.Get(serve.HeaderAttempts))
	}
	if primary.hits.Load() != before {
		t.Error("the open primary was called")
	}
}

func TestEverythingOpenIs503WithRetryAfter(t *testing.T) {
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	a.down.Store(true)
	b.down.Store(true)
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL, func(e *httpcall.Endpoint) {
			e.Policy.Breaker.OpenFor = 10 * time.Minute
		})},
		Chains: []*httpcall.Chain{{Name: "both", Endpoints: []string{"a", "b"}}},
	}, serve.Options{})

	r := d.get(t, "/call/both")
	if r.code != http.StatusServiceUnavailable {
		t.Fatalf("every endpoint failing: got %d, want 503", r.code)
	}
	v := r.json(t)
	if v["error"] != httpcall.ErrAllFailed.Error() || len(v["errors"].([]any)) != 2 {
		t.Fatalf("error body %s", r.body)
	}
	if !strings.Contains(r.body, "status 503") {
		t.Errorf("the body does not say why each failed: %s", r.body)
	}

	r = d.get(t, "/call/both")
	if r.code != http.StatusServiceUnavailable || r.json(t)["error"] != httpcall.ErrAllSkipped.Error() {
		t.Fatalf("every circuit open: got %d %s", r.code, r.body)
	}
	for _, e := range r.json(t)["errors"].([]any) {
		if e.(map[string]any)["skipped"] != true {
			t.Errorf("not marked skipped: %v", e)
		}
	}
	// a may be probed in a minute, b in ten: Retry-After is a's.
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Errorf("Retry-After = %q, want 1..60 (a's open period)", r.header.Get("Retry-After"))
	}
}

func TestUnknownNameIs404AndNothingIsCalled(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
	if r := d.get(t, "/call/u/extra"); r.code != http.StatusForbidden || !strings.Contains(r.body, "allow_subpath") {
		t.Errorf("a subpath the endpoint does not allow: %d %s", r.code, r.body)
	}
	for _, path := range []string{"/call/nope", "/call/nope/x", "/call/", "/call", "/debug/pprof/", "/u"} {
		if r := d.get(t, path); r.code != http.StatusNotFound && r.code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d, want 404", path, r.code)
		}
	}
	if u.hits.Load() != 0 {
		t.Errorf("upstream called %d times", u.hits.Load())
	}
}

func TestExtractionAnswersAsJSON(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("temp", u.URL, func(e *httpcall.Endpoint) {
		e.Extract = httpcall.JQSource(".temp")
	})}}, serve.Options{})
	r := d.get(t, "/call/temp")
	if r.code != 200 || strings.TrimSpace(r.body) != "21.5" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("got %d %q %q", r.code, r.body, r.header.Get("Content-Type"))
	}
	if r.header.Get("X-Upstream") != "" {
		t.Error("an extraction carries the upstream's headers")
	}
}

func TestStaleAnswerSaysItsAge(t *testing.T) {
	u := newUpstream(t, "u")
	clk := testenv.NewClock(fusebox.WallClock{}.Now())
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) {
		e.Stale = time.Hour
	})}}, serve.Options{Clock: clk})
	if r := d.get(t, "/call/u"); r.code != 200 {
		t.Fatal(r.code)
	}
	u.down.Store(true)
	clk.Advance(90 * time.Second)
	r := d.get(t, "/call/u")
	if r.code != 200 || r.header.Get(serve.HeaderSource) != httpcall.SourceStale {
		t.Fatalf("got %d from %q", r.code, r.header.Get(serve.HeaderSource))
	}
	if got := r.header.Get(serve.HeaderStaleAge); got != "90" {
		t.Errorf("%s = %q, want 90", serve.HeaderStaleAge, got)
	}
	if r.header.Get(serve.HeaderAnswered) != "u" || !strings.Contains(r.body, `"u"`) {
		t.Errorf("stale answer: %v %q", r.header, r.body)
	}
}

func TestTripAndResetOverTheAPI(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
	if r := d.do(t, "POST", "/api/circuits/u/trip?for=10m"); r.code != 200 || r.json(t)["state"] != "forced_open" {
		t.Fatalf("trip: %d %s", r.code, r.body)
	}
	r := d.get(t, "/call/u")
	if r.code != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("tripped: %d Retry-After %q", r.code, r.header.Get("Retry-After"))
	}
	if u.hits.Load() != 0 {
		t.Fatal("a tripped endpoint was called")
	}
	var rows []map[string]any
	if r := d.get(t, "/api/circuits"); r.code != 200 {
		t.Fatal(r.code)
	} else if err := jsonUnmarshal(r.body, &rows); err != nil || len(rows) != 1 || rows[0]["state"] != "forced_open" {
		t.Fatalf("/api/circuits: %v %s", err, r.body)
	}
	if r := d.do(t, "POST", "/api/circuits/u/reset"); r.code != 200 || r.json(t)["state"] != "closed" {
		t.Fatalf("reset: %d %s", r.code, r.body)
	}
	if r := d.get(t, "/call/u"); r.code != 200 {
		t.Fatalf("after reset: %d", r.code)
	}
	for _, path := range []string{"/api/circuits/nope/trip", "/api/circuits/u/trip?for=soon"} {
		if r := d.do(t, "POST", path); r.code != 404 && r.code != 400 {
			t.Errorf("POST %s: %d", path, r.code)
		}
	}
	if r := d.get(t, "/api/circuits/u/trip"); r.code != http.StatusMethodNotAllowed {
		t.Errorf("GET trip: %d, want 405", r.code)
	}
}

// The API trips and resets every circuit the config has, not only its
// endpoints: a circuit watched over MQTT, or one only commands run under,
// before anything has stored it (as fusebox trip does). A name the config
// does not have and the store does not hold is still no circuit.
func TestTheAPITripsEveryConfiguredCircuit(t *testing.T) {
	d := start(t, serve.Targets{Circuits: []string{"nas-backup", "zigbee2mqtt"}}, serve.Options{})
	for _, name := range []string{"zigbee2mqtt", "nas-backup"} {
		if r := d.do(t, "POST", "/api/circuits/"+name+"/trip?for=10m"); r.code != 200 || r.json(t)["state"] != "forced_open" {
			t.Errorf("trip %s, configured and never stored: %d %s", name, r.code, r.body)
		}
		if r := d.do(t, "POST", "/api/circuits/"+name+"/reset"); r.code != 200 || r.json(t)["state"] != "closed" {
			t.Errorf("reset %s: %d %s", name, r.code, r.body)
		}
	}
	if r := d.do(t, "POST", "/api/circuits/nas-backpu/trip"); r.code != http.StatusNotFound {
		t.Errorf("trip of a name nobody configured: %d %s, want 404", r.code, r.body)
	}
}
