package httpcall_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

// transportClient returns an *http.Client whose requests go through a
// Transport with fastPolicy, and the store its circuits live in. Its
// attempt timeout is long enough for a busy machine; a test about timeouts
// sets a short one (shortTimeout).
func transportClient(t *testing.T, mods ...func(*fusebox.Policy)) (*http.Client, *mem.Store) {
	t.Helper()
	p := fastPolicy()
	p.Retry.Timeout = 10 * time.Second
	for _, m := range mods {
		m(&p)
	}
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return transportOver(base, fusebox.WithPolicy(p))
}

// transportOver returns an *http.Client whose requests go through a
// Transport over base, with circuits made with opts in a new store.
func transportOver(base http.RoundTripper, opts ...fusebox.Option) (*http.Client, *mem.Store) {
	store := mem.New()
	tr := &httpcall.Transport{Circuits: fusebox.New(store, opts...), Base: base}
	return &http.Client{Transport: tr}, store
}

// shortTimeout is transportClient's option for a test about timeouts.
func shortTimeout(p *fusebox.Policy) { p.Retry.Timeout = 100 * time.Millisecond }

func circuitOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return httpcall.HostCircuit(&http.Request{URL: u})
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return string(b)
}

func TestTransportRetriesServerErrors(t *testing.T) {
	s := serve(t, sequence(status(503, "busy"), status(502, "bad"), status(200, "ok")))
	hc, store := transportClient(t)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 200 || got != "ok" || s.hits.Load() != 3 {
		t.Errorf("got %d %q after %d requests; want 200 ok after 3", resp.StatusCode, got, s.hits.Load())
	}
	c, _ := store.Counts(context.Background(), circuitOf(t, s.URL))
	if c.Failures != 2 || c.Successes != 1 {
		t.Errorf("circuit %s recorded %d failures, %d successes; want 2 and 1", circuitOf(t, s.URL), c.Failures, c.Successes)
	}
}

func TestTransportReturnsTheLastResponse(t *testing.T) {
	s := serve(t, status(503, "still busy"))
	hc, _ := transportClient(t)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 503 || got != "still busy" || s.hits.Load() != 3 {
		t.Errorf("got %d %q after %d requests; want the third 503", resp.StatusCode, got, s.hits.Load())
	}
}

func TestTransportClientErrorIsTheRequestsFault(t *testing.T) {
	s := serve(t, status(404, "no such thing"))
	hc, store := transportClient(t)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); resp.StatusCode != 404 || got != "no such thing" || s.hits.Load() != 1 {
		t.Errorf("got %d %q after %d requests; want the one 404 and its body", resp.StatusCode, got, s.hits.Load())
	}
	name := circuitOf(t, s.URL)
	c, _ := store.Counts(context.Background(), name)
	events, _ := store.Events(context.Background(), name, time.Time{})
	if c.Failures != 0 || c.Successes != 0 || len(events) != 1 || events[0].Kind != breaker.EventNeutralFailure {
		t.Errorf("%d failures, %d successes, events %+v; want one neutral failure and nothing counted",
			c.Failures, c.Successes, events)
	}
}

func TestTransportOpenCircuitSendsNothing(t *testing.T) {
	s := serve(t, status(200, "ok"))
	hc, store := transportClient(t)
	_, err := store.Update(context.Background(), circuitOf(t, s.URL), func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(fusebox.WallClock{}.Now(), time.Hour, ""), true
	})
	if err != nil {
		t.Fatal(err)
	}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest("PUT", s.URL, body)
	_, err = hc.Do(req)
	if !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("err = %v, want ErrOpen", err)
	}
	if s.hits.Load() != 0 {
		t.Error("a request went through an open circuit")
	}
	if !body.closed {
		t.Error("the request body was not closed")
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

func TestTransportRequestBodies(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		header    string
		noGetBody bool
		wantHits  int64
	}{
		{"PUT body is sent again on each retry", "PUT", "", false, 3},
		{"POST is not retried", "POST", "", false, 1},
		{"POST with an Idempotency-Key is retried", "POST", "Idempotency-Key", false, 3},
		{"a body without GetBody is not retried", "PUT", "", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
				w.WriteHeader(503)
			})
			hc, _ := transportClient(t)
			req, _ := http.NewRequest(tt.method, s.URL, bytes.NewReader([]byte(`{"on":true}`)))
			if tt.noGetBody {
				req.GetBody = nil
			}
			if tt.header != "" {
				req.Header.Set(tt.header, "k1")
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if s.hits.Load() != tt.wantHits || resp.StatusCode != 503 {
				t.Errorf("%d requests ending in %d; want %d ending in 503", s.hits.Load(), resp.StatusCode, tt.wantHits)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, b := range bodies {
				if b != `{"on":true}` {
					t.Errorf("server got body %q", b)
				}
			}
		})
	}
}

func TestTransportBodyOutlivesTheAttemptTimeout(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte("first "))
		_ = http.NewResponseController(w).Flush()
		time.Sleep(150 * time.Millisecond) // longer than the 100ms attempt timeout
		_, _ = w.Write([]byte("second"))
	})
	hc, _ := transportClient(t, shortTimeout)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "first second" {
		t.Errorf("body %q", got)
	}
}

func TestTransportFailures(t *testing.T) {
	tests := []struct {
		name, url, want string
	}{
		{"connection refused", fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "attempts exhausted after 3 attempts: connection refused"},
		{"no response", "http://" + silentServer(t), "attempts exhausted after 3 attempts: timeout after 100ms: no response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc, store := transportClient(t, shortTimeout)
			_, err := hc.Get(tt.url)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			c, _ := store.Counts(context.Background(), circuitOf(t, tt.url))
			if c.Failures != 3 {
				t.Errorf("%d failures counted, want 3", c.Failures)
			}
		})
	}
}

func TestTransportTooManyRequestsOpensTheCircuit(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(429)
	})
	hc, store := transportClient(t)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	st, _ := store.Load(context.Background(), circuitOf(t, s.URL))
	if resp.StatusCode != 429 || st.Phase != breaker.Open || time.Duration(st.OpenPeriod) != time.Minute {
		t.Errorf("got %d, circuit %s for %s; want 429 and open for 1m", resp.StatusCode, st.Phase, time.Duration(st.OpenPeriod))
	}
	if _, err := hc.Get(s.URL); !errors.Is(err, breaker.ErrOpen) || s.hits.Load() != 1 {
		t.Errorf("second request: %v after %d requests", err, s.hits.Load())
	}
}

func TestTransportCustomName(t *testing.T) {
	s := serve(t, status(500, ""))
	store := mem.New()
	p := fastPolicy()
	p.Retry.Attempts = 1
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	hc := &http.Client{Transport: &httpcall.Transport{
		Circuits: fusebox.New(store, fusebox.WithPolicy(p)),
		Base:     base,
		Name:     func(*http.Request) string { return "ha" },
	}}
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if names, _ := store.Names(context.Background()); len(names) != 1 || names[0] != "ha" {
		t.Errorf("circuits %v, want [ha]", names)
	}
}

func TestHostCircuit(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8123/api":                       "127.0.0.1_8123",
		"https://API.Example.com/x":                       "api.example.com",
		"http://[::1]:80/":                                "___1__80",
		"http://" + strings.Repeat("a", 80) + ".example/": strings.Repeat("a", 64),
	} {
		if got := circuitOf(t, raw); got != want {
			t.Errorf("HostCircuit(%s) = %q, want %q", raw, got, want)
		}
		if err := fusebox.ValidateName(circuitOf(t, raw)); err != nil {
			t.Error(err)
		}
	}
}

// breakerEffect is what an upstream's answers did to a circuit.
type breakerEffect struct {
	Requests            int64 // reaching the server
	Failures, Successes uint64
	NeutralFailures     int
	Phase               breaker.Phase
	OpenPeriod          time.Duration
}

func effectOn(t *testing.T, s *server, store *mem.Store, name string) breakerEffect {
	t.Helper()
	ctx := context.Background()
	st, err := store.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	events, err := store.Events(ctx, name, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Counts(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	e := breakerEffect{Requests: s.hits.Load(), Failures: c.Failures, Successes: c.Successes,
		Phase: st.Phase, OpenPeriod: time.Duration(st.OpenPeriod)}
	if e.Phase == "" {
		e.Phase = breaker.Closed // never stored: a success is only counted
	}
	for _, ev := range events {
		if ev.Kind == breaker.EventNeutralFailure {
			e.NeutralFailures++
		}
	}
	return e
}

func TestTransportAndClientAgree(t *testing.T) {
	retryAfter := func(code int, secs string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", secs)
			w.WriteHeader(code)
		}
	}
	tests := []struct {
		name    string
		answers []http.HandlerFunc // the upstream's, in turn, the last repeated
		want    breakerEffect
	}{
		{"200 is a success for both", []http.HandlerFunc{status(200, "ok")},
			breakerEffect{Requests: 1, Successes: 1, Phase: breaker.Closed}},
		{"404 neither trips nor counts as a success for both", []http.HandlerFunc{status(404, "no such thing")},
			breakerEffect{Requests: 1, NeutralFailures: 1, Phase: breaker.Closed}},
		{"401 is neutral and not retried for both", []http.HandlerFunc{status(401, "")},
			breakerEffect{Requests: 1, NeutralFailures: 1, Phase: breaker.Closed}},
		{"403 is neutral and not retried for both", []http.HandlerFunc{status(403, "")},
			breakerEffect{Requests: 1, NeutralFailures: 1, Phase: breaker.Closed}},
		{"503 counts against both, each attempt, and trips them", []http.HandlerFunc{status(503, "busy")},
			breakerEffect{Requests: 3, Failures: 3, Phase: breaker.Open, OpenPeriod: time.Minute}},
		{"503 then 200: one failure, one success", []http.HandlerFunc{status(503, ""), status(200, "ok")},
			breakerEffect{Requests: 2, Failures: 1, Successes: 1, Phase: breaker.Closed}},
		{"429 with Retry-After 30 opens both for 30s", []http.HandlerFunc{retryAfter(429, "30")},
			breakerEffect{Requests: 1, Failures: 1, Phase: breaker.Open, OpenPeriod: 30 * time.Second}},
		{"503 with Retry-After 0 is retried at once by both", []http.HandlerFunc{retryAfter(503, "0"), status(200, "ok")},
			breakerEffect{Requests: 2, Failures: 1, Successes: 1, Phase: breaker.Closed}},
	}
	policy := fastPolicy()
	policy.Breaker.TripAfter = 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, sequence(tt.answers...))
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) { e.Policy = policy })}, nil)
			_, _ = h.call("svc")
			client := effectOn(t, s, h.store, "svc")

			s = serve(t, sequence(tt.answers...))
			hc, store := transportClient(t, func(p *fusebox.Policy) { p.Breaker = policy.Breaker })
			resp, err := hc.Get(s.URL)
			if err != nil {
				t.Fatalf("the Transport returned %v, want the final response", err)
			}
			readAll(t, resp)
			transport := effectOn(t, s, store, circuitOf(t, s.URL))

			if client != tt.want || transport != tt.want {
				t.Errorf("breaker effect\n  client:    %+v\n  transport: %+v\n  want:      %+v", client, transport, tt.want)
			}
		})
	}
}

func TestTransportReadsRetryAfterWithTheCircuitsClock(t *testing.T) {
	// The circuits' clock stands still years from the real time, so a date
	// read against time.Now would give a wait of about a day (the cap).
	clock := newFakeClock()
	date := func(d time.Duration) string { return clock.Now().Wall.Add(d).Format(http.TimeFormat) }

	t.Run("429 with an HTTP-date opens the circuit until that date", func(t *testing.T) {
		s := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", date(90*time.Second))
			w.WriteHeader(429)
		})
		base := &http.Transport{}
		t.Cleanup(base.CloseIdleConnections)
		hc, store := transportOver(base, fusebox.WithPolicy(fastPolicy()), fusebox.WithClock(clock))
		resp, err := hc.Get(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		st, _ := store.Load(context.Background(), circuitOf(t, s.URL))
		if st.Phase != breaker.Open || time.Duration(st.OpenPeriod) != 90*time.Second || !st.OpenUntil.Equal(clock.Now().Wall.Add(90*time.Second)) {
			t.Errorf("circuit %s for %s until %s; want open for 1m30s until %s",
				st.Phase, time.Duration(st.OpenPeriod), st.OpenUntil, clock.Now().Wall.Add(90*time.Second))
		}
	})

	t.Run("503 with an HTTP-date 7s ahead waits 7s before the retry", func(t *testing.T) {
		// The server runs outside the bubble: its goroutines wait on the
		// network, which would keep the bubble's clock from moving.
		s := serve(t, sequence(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", date(7*time.Second))
			w.WriteHeader(503)
		}, status(200, "ok")))
		synctest.Test(t, func(t *testing.T) {
			p := fastPolicy()
			p.Retry.Deadline = time.Minute
			// No idle connection may wait on the network inside the bubble.
			base := &http.Transport{DisableKeepAlives: true}
			defer base.CloseIdleConnections()
			hc, _ := transportOver(base, fusebox.WithPolicy(p), fusebox.WithClock(clock))
			start := time.Now()
			resp, err := hc.Get(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if took := time.Since(start); resp.StatusCode != 200 || took != 7*time.Second {
				t.Errorf("got %d after %s; want 200 after exactly 7s", resp.StatusCode, took)
			}
		})
	})
}
