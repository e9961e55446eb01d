package serve_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// hangs makes an endpoint whose attempts only the caller's wait can cut.
func hangs(e *httpcall.Endpoint) {
	e.Policy.Retry.Timeout = time.Hour
	e.Policy.Retry.Deadline = 2 * time.Hour
	e.Policy.Breaker.TripAfter = 100 // every call tries it
}

// within calls path as a caller that waits wait and gives up then, as
// Node-RED's node and n8n do: it fails the test when the daemon had not
// answered by then.
func (d *daemon) within(t *testing.T, wait time.Duration, path string, header http.Header) (reply, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+d.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	start := time.Now()
	resp, err := (&http.Client{Transport: tr, Timeout: wait}).Do(req)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("GET %s: the caller gave up after %s without an answer (its wait: %s): %v", path, took, wait, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, body: string(b)}, took
}

func waitHeader(v string) http.Header { return http.Header{serve.HeaderWait: {v}} }

func TestACallerIsAnsweredWithinTheWaitItDeclares(t *testing.T) {
	g := newGate(t) // never answers
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("hangs", g.URL, hangs)}}, serve.Options{})
	const wait = 3 * time.Second
	for _, tc := range []struct {
		how    string
		path   string
		header http.Header
	}{
		{"header, in seconds", "/call/hangs", waitHeader("3")},
		{"header, a duration", "/call/hangs", waitHeader("3000ms")},
		{"query parameter", "/call/hangs?fusebox_wait=3", nil},
		{"both: the sooner", "/call/hangs?fusebox_wait=3", waitHeader("300")},
	} {
		r, took := d.within(t, wait, tc.path, tc.header)
		if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "3" {
			t.Errorf("%s: %d, Retry-After %q, %s; want a 503 with Retry-After: 3", tc.how, r.code, r.header.Get("Retry-After"), r.body)
		}
		if took < wait*9/10-100*time.Millisecond {
			t.Errorf("%s: answered after %s: before the call's share of the %s wait (it was cut early)", tc.how, took, wait)
		}
		if !strings.Contains(r.body, "caller's deadline") && !strings.Contains(r.body, "deadline reached") {
			t.Errorf("%s: the reason does not say the wait ended it: %s", tc.how, r.body)
		}
	}
}

func TestACallerThatDeclaresNoWaitHasTheDaemonsDefault(t *testing.T) {
	g := newGate(t)
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("hangs", g.URL, hangs)}}, serve.Options{Wait: 2 * time.Second})
	if r, _ := d.within(t, 2*time.Second, "/call/hangs", nil); r.code != http.StatusServiceUnavailable {
		t.Errorf("%d %s; want a 503 within the default wait", r.code, r.body)
	}
}

func TestTheBestAnswerByTheCallersWaitIsServed(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() && r.URL.Path == "/primary" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprintf(w, `{"from":%q,"query":%q}`, r.URL.Path, r.URL.RawQuery)
	}))
	t.Cleanup(upstream.Close)
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{
			endpoint("primary", upstream.URL+"/primary", hangs, func(e *httpcall.Endpoint) { e.Stale = time.Hour }),
			endpoint("fallback", upstream.URL+"/fallback"),
			endpoint("echo", upstream.URL+"/echo", func(e *httpcall.Endpoint) { e.PassQuery = true }),
		},
		Chains: []*httpcall.Chain{{Name: "weather", Endpoints: []string{"primary", "fallback"}, Deadline: time.Hour}},
	}, serve.Options{})

	// The wait is the daemon's: the upstream never sees it.
	if r, _ := d.within(t, 3*time.Second, "/call/echo?fusebox_wait=3&city=Berlin", nil); r.code != 200 || r.body != `{"from":"/echo","query":"city=Berlin"}` {
		t.Errorf("echo: %d %s; want the query without fusebox_wait", r.code, r.body)
	}
	if r, _ := d.within(t, 3*time.Second, "/call/primary", nil); r.code != 200 {
		t.Fatalf("primary: %d %s", r.code, r.body)
	}

	hang.Store(true)
	// A chain whose primary hangs: the fallback answers within the wait,
	// though the chain's own deadline is an hour.
	r, _ := d.within(t, 4*time.Second, "/call/weather", waitHeader("4"))
	if r.code != 200 || r.header.Get(serve.HeaderSource) != "fallback" {
		t.Errorf("weather: %d from %q: %s; want the fallback's answer", r.code, r.header.Get(serve.HeaderSource), r.body)
	}
	// An endpoint that hangs: its stored answer, stale, within the wait.
	r, _ = d.within(t, 3*time.Second, "/call/primary", waitHeader("3"))
	if r.code != 200 || r.header.Get(serve.HeaderSource) != httpcall.SourceStale || r.body != `{"from":"/primary","query":""}` {
		t.Errorf("primary: %d from %q: %s; want its stale answer", r.code, r.header.Get(serve.HeaderSource), r.body)
	}
}

func TestAWaitThatIsNoWaitIsRefused(t *testing.T) {
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("a", "http://127.0.0.1:1")}}, serve.Options{})
	for _, tc := range []struct{ path, header, want string }{
		{"/call/a", "soon", "X-Fusebox-Wait: want seconds (30) or a duration (2500ms, 30s), got \"soon\""},
		{"/call/a", "0", "X-Fusebox-Wait: want a wait of more than 0 seconds"},
		{"/call/a", "-5", "X-Fusebox-Wait: want a wait of more than 0 seconds"},
		{"/call/a", "NaN", "X-Fusebox-Wait: want a wait of more than 0 seconds"},
		{"/call/a?fusebox_wait=1y", "", "fusebox_wait: want seconds"},
	} {
		r := d.get(t, tc.path, func(req *http.Request) {
			if tc.header != "" {
				req.Header.Set(serve.HeaderWait, tc.header)
			}
		})
		var p struct{ Error string }
		_ = json.Unmarshal([]byte(r.body), &p)
		if r.code != http.StatusBadRequest || !strings.Contains(p.Error, tc.want) {
			t.Errorf("%s with %q: %d %s; want a 400 saying %q", tc.path, tc.header, r.code, r.body, tc.want)
		}
	}
}

func TestAHugeWaitIsCappedNotOverflowed(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	t.Cleanup(ok.Close)
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("ok", ok.URL)}}, serve.Options{})
	for _, v := range []string{"1e300", "9223372036854775807", "2562047h"} {
		if r := d.get(t, "/call/ok", func(req *http.Request) { req.Header.Set(serve.HeaderWait, v) }); r.code != 200 {
			t.Errorf("wait %s: %d %s", v, r.code, r.body)
		}
	}
}
