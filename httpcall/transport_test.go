package httpcall_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
)

// transportClient returns an *http.Client whose requests go through a
// Transport with fastPolicy, and the store its circuits live in.
func transportClient(t *testing.T, mods ...func(*fusebox.Policy)) (*http.Client, *mem.Store) {
	t.Helper()
	p := fastPolicy()
	p.Retry.Timeout = 100 * time.Millisecond
	for _, m := range mods {
		m(&p)
	}
	store := mem.New()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := &httpcall.Transport{Circuits: fusebox.New(store, fusebox.WithPolicy(p)), Base: base}
	return &http.Client{Transport: tr}, store
}

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

func TestTransportClientErrorIsAnAnswer(t *testing.T) {
	s := serve(t, status(404, "no such thing"))
	hc, store := transportClient(t)
	resp, err := hc.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	c, _ := store.Counts(context.Background(), circuitOf(t, s.URL))
	if resp.StatusCode != 404 || s.hits.Load() != 1 || c.Failures != 0 {
		t.Errorf("got %d after %d requests, %d failures counted", resp.StatusCode, s.hits.Load(), c.Failures)
	}
}

func TestTransportOpenCircuitSendsNothing(t *testing.T) {
	s := serve(t, status(200, "ok"))
	hc, store := transportClient(t)
	_, err := store.Update(context.Background(), circuitOf(t, s.URL), func(st *fusebox.State) ([]fusebox.Event, bool) {
		return st.Trip(fusebox.WallClock{}.Now(), time.Hour), true
	})
	if err != nil {
		t.Fatal(err)
	}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest("PUT", s.URL, body)
	_, err = hc.Do(req)
	if !errors.Is(err, fusebox.ErrOpen) {
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
	hc, _ := transportClient(t)
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
		{"connection refused", "http://" + closedPort(t), "attempts exhausted after 3 attempts: connection refused"},
		{"no response", "http://" + silentServer(t), "attempts exhausted after 3 attempts: timeout after 100ms: no response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc, store := transportClient(t)
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
	if resp.StatusCode != 429 || st.Phase != fusebox.Open || time.Duration(st.OpenPeriod) != time.Minute {
		t.Errorf("got %d, circuit %s for %s; want 429 and open for 1m", resp.StatusCode, st.Phase, time.Duration(st.OpenPeriod))
	}
	if _, err := hc.Get(s.URL); !errors.Is(err, fusebox.ErrOpen) || s.hits.Load() != 1 {
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
