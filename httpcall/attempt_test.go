package httpcall_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestStatusHandling(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		tripOn4xx  bool
		wantHits   int64
		wantCounts uint64 // failures counted against the breaker
		wantReason string
	}{
		{"5xx is retried and counted", 500, false, 3, 3, "attempts exhausted after 3 attempts: status 500 Internal Server Error"},
		{"4xx is neither retried nor counted", 404, false, 1, 0, "not retryable after 1 attempt: status 404 Not Found"},
		{"trip_on_4xx counts a 4xx, still not retried", 404, true, 1, 1, "not retryable after 1 attempt: status 404 Not Found"},
		{"401 is neither retried nor counted", 401, false, 1, 0, "not retryable after 1 attempt: status 401 Unauthorized"},
		{"403 is not retried", 403, false, 1, 0, "status 403 Forbidden"},
		{"3xx not followed is retried", 304, false, 3, 3, "status 304 Not Modified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, status(tt.code, "nope"))
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) { e.TripOn4xx = tt.tripOn4xx })}, nil)
			_, ce := h.mustFail("svc")
			wantContains(t, "error", ce.Error(), tt.wantReason)
			if got := s.hits.Load(); got != tt.wantHits {
				t.Errorf("%d requests, want %d", got, tt.wantHits)
			}
			st := h.state("svc")
			if n := h.counts("svc").Failures; n != tt.wantCounts || st.ConsecutiveFailures != int(tt.wantCounts) {
				t.Errorf("breaker counted %d failures (%d consecutive), want %d", n, st.ConsecutiveFailures, tt.wantCounts)
			}
		})
	}
}

func TestUnauthorizedReasonSaysCheckTheToken(t *testing.T) {
	s := serve(t, status(401, ""))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("ha", s.URL)}, nil)
	_, ce := h.mustFail("ha")
	wantContains(t, "error", ce.Error(),
		"ha: not retryable after 1 attempt: status 401 Unauthorized — check the token; not retried (Home Assistant bans IPs after repeated bad logins)")
	events, _ := h.store.Events(context.Background(), "ha", breaker.Instant{}.Wall)
	if len(events) != 1 || events[0].Kind != breaker.EventNeutralFailure {
		t.Errorf("events = %+v, want one neutral failure", events)
	}
}

func TestExplicitRetryCodes(t *testing.T) {
	s := serve(t, sequence(status(409, ""), status(200, "ok")))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.RetryOn = httpcall.RetryOn{Codes: []int{409}}
	})}, nil)
	if res := h.mustCall("svc"); res.Attempts != 2 {
		t.Errorf("Attempts = %d, want 2", res.Attempts)
	}
}

func TestRetryOnLeavesOutWhatIsNotListed(t *testing.T) {
	s := serve(t, status(503, ""))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.RetryOn = httpcall.RetryOn{Connect: true, Timeout: true}
	})}, nil)
	_, ce := h.mustFail("svc")
	if s.hits.Load() != 1 || h.counts("svc").Failures != 1 {
		t.Errorf("%v after %d requests; want one counted, unretried failure", ce, s.hits.Load())
	}
}

func TestUnsafeMethods(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		target      string // "503" or "closed"
		retryUnsafe bool
		wantTries   int
	}{
		{"POST to a 503 is not retried", "POST", "503", false, 1},
		{"PATCH to a 503 is not retried", "PATCH", "503", false, 1},
		{"POST to a closed port is retried", "POST", "closed", false, 3},
		{"retry_unsafe retries a POST", "POST", "503", true, 3},
		{"PUT is idempotent", "PUT", "503", false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, r.Method+" "+string(b))
				mu.Unlock()
				w.WriteHeader(503)
			})
			url := s.URL
			if tt.target == "closed" {
				url = fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
			}
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", url, func(e *httpcall.Endpoint) {
				e.Method, e.Body, e.RetryUnsafe = tt.method, `{"state":"on"}`, tt.retryUnsafe
			})}, nil)
			res, _ := h.mustFail("svc")
			if res.Attempts != tt.wantTries {
				t.Errorf("%d attempts, want %d", res.Attempts, tt.wantTries)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, b := range bodies {
				if b != tt.method+` {"state":"on"}` {
					t.Errorf("server got %q", b)
				}
			}
		})
	}
}

func TestExpect(t *testing.T) {
	tests := []struct {
		name       string
		code       int
		body       string
		expect     httpcall.Expect
		wantReason string // "" for success
	}{
		{"default expects 2xx", 204, "", httpcall.Expect{}, ""},
		{"status list", 201, "", httpcall.Expect{Status: []int{200}}, "status 201 not in [200]"},
		{"status list with 5xx", 500, "", httpcall.Expect{Status: []int{200}}, "status 500 Internal Server Error"},
		{"status list accepts a 404", 404, "gone", httpcall.Expect{Status: []int{200, 404}}, ""},
		{"jq true", 200, `{"main":{"temp":3}}`, httpcall.Expect{JQ: httpcall.JQSource(".main.temp != null")}, ""},
		{"jq false", 200, `{"main":{}}`, httpcall.Expect{JQ: httpcall.JQSource(".main.temp != null")}, `expect.jq ".main.temp != null" was false`},
		{"jq on a body that is not JSON", 200, `<html>`, httpcall.Expect{JQ: httpcall.JQSource(".ok")}, "body is not JSON"},
		{"jq on two JSON values", 200, `{} {}`, httpcall.Expect{JQ: httpcall.JQSource(".ok")}, "body is not JSON"},
		{"jq with no output", 200, `[]`, httpcall.Expect{JQ: httpcall.JQSource(".[]")}, `expect.jq ".[]" was false`},
		{"jq error", 200, `{"a":"x"}`, httpcall.Expect{JQ: httpcall.JQSource(".a.b")}, `expect.jq ".a.b" failed: expected an object but got: string ("x")`},
		{"jq number comparison", 200, `{"v":21.5}`, httpcall.Expect{JQ: httpcall.JQSource(".v > 20 and .v + 1 == 22.5")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, status(tt.code, tt.body))
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) { e.Expect = tt.expect })}, nil)
			res, err := h.call("svc")
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				if string(res.Body) != tt.body || res.Status != tt.code {
					t.Errorf("got %d %q, want %d %q", res.Status, res.Body, tt.code, tt.body)
				}
				return
			}
			if err == nil {
				t.Fatalf("Call answered %q, want failure %q", res.Body, tt.wantReason)
			}
			wantContains(t, "error", err.Error(), "attempts exhausted after 3 attempts: "+tt.wantReason)
			if h.counts("svc").Failures != 3 {
				t.Errorf("breaker counted %d failures, want 3", h.counts("svc").Failures)
			}
		})
	}
}

func TestExtractGivesTheSameNumberFromDifferentAPIs(t *testing.T) {
	owm := serve(t, status(200, `{"coord":{"lon":2.35,"lat":48.85},"main":{"temp":21.5,"humidity":40},"name":"Paris"}`))
	wttr := serve(t, status(200, `{"current_condition":[{"temp_C":"21.5","humidity":"40"}],"nearest_area":[{"areaName":[{"value":"Paris"}]}]}`))
	h := newHarness(t, []*httpcall.Endpoint{
		endpoint("owm", owm.URL, func(e *httpcall.Endpoint) {
			e.Expect.JQ = httpcall.JQSource(".main.temp != null")
			e.Extract = httpcall.JQSource(".main.temp")
		}),
		endpoint("wttr", wttr.URL, func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource(".current_condition[0].temp_C | tonumber") }),
	}, []*httpcall.Chain{{Name: "temp", Endpoints: []string{"owm", "wttr"}}})
	a, b := h.mustCall("owm"), h.mustCall("wttr")
	if string(a.Body) != "21.5" || string(b.Body) != "21.5" {
		t.Errorf("owm gave %q, wttr gave %q; want 21.5 from both", a.Body, b.Body)
	}
	env, _ := a.Envelope()
	if string(env) != `{"source":"owm","status":200,"attempts":1,"body":21.5,"errors":[]}` {
		t.Errorf("Envelope = %s", env)
	}
}

func TestExtractOutput(t *testing.T) {
	const body = `{"name":"Paris","big":12345678901234567890,"list":[1,"two",{"x":null}],"nested":{"b":1,"a":[true]}}`
	tests := []struct{ extract, want string }{
		{".name", "Paris"},
		{".big", "12345678901234567890"},
		{".list", `[1,"two",{"x":null}]`},
		{".list[]", "1\ntwo\n{\"x\":null}"},
		{".nested", `{"a":[true],"b":1}`},
		{".missing", "null"},
		{`"\(.name): \(.list[0])"`, "Paris: 1"},
	}
	s := serve(t, status(200, body))
	for _, tt := range tests {
		h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
			e.Extract = httpcall.JQSource(tt.extract)
			// Interpolation runs in a child process, which a busy machine
			// may take seconds to start.
			e.Policy.Retry.Timeout, e.Policy.Retry.Deadline = time.Minute, time.Minute
		})}, nil)
		if res := h.mustCall("svc"); string(res.Body) != tt.want {
			t.Errorf("extract %s = %q, want %q", tt.extract, res.Body, tt.want)
		}
	}
}

func TestExtractFailures(t *testing.T) {
	tests := []struct{ body, extract, wantReason string }{
		{`{"a":"x"}`, ".a.b", `extract ".a.b": expected an object but got: string ("x")`},
		{`[]`, ".[]", `extract ".[]": no result`},
		{`oops`, ".a", "body is not JSON"},
		{`{}`, "$ENV | length | if . == 0 then error(\"empty env\") else . end", `empty env`},
		{`{}`, "range(1e9)", "output larger than 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.extract, func(t *testing.T) {
			s := serve(t, status(200, tt.body))
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
				e.Extract = httpcall.JQSource(tt.extract)
				e.MaxBody = 1024
				e.Policy.Retry.Attempts = 1
			})}, nil)
			_, ce := h.mustFail("svc")
			wantContains(t, "error", ce.Error(), tt.wantReason)
		})
	}
}

func TestBodyCap(t *testing.T) {
	const size, limit = 20 << 20, 1 << 20
	for _, declared := range []bool{false, true} {
		t.Run(fmt.Sprintf("content-length %v", declared), func(t *testing.T) {
			written := make(chan int, 1)
			s := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if declared {
					w.Header().Set("Content-Length", fmt.Sprint(size))
				}
				chunk := strings.Repeat("x", 64<<10)
				n := 0
				for n < size {
					k, err := io.WriteString(w, chunk)
					n += k
					if err != nil {
						break
					}
				}
				written <- n
			})
			h := newHarness(t, []*httpcall.Endpoint{endpoint("big", s.URL, func(e *httpcall.Endpoint) { e.MaxBody = limit })}, nil)
			_, ce := h.mustFail("big")
			wantContains(t, "error", ce.Error(), "not retryable after 1 attempt: body larger than 1048576 bytes")
			if n := <-written; n >= size {
				t.Errorf("the server could write all %d bytes: the client read past the cap", n)
			}
			if h.counts("big").Failures != 1 {
				t.Error("an oversized body was not counted")
			}
		})
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	_, err := httpcall.New(nil, nil, nil)
	if err == nil {
		t.Error("New accepted a nil store")
	}
	h := newHarness(t, nil, nil)
	_ = h
	endpoints := []*httpcall.Endpoint{
		endpoint("badjq", "http://127.0.0.1/", func(e *httpcall.Endpoint) { e.Expect.JQ = httpcall.JQSource(".a |") }),
		endpoint("badextract", "http://127.0.0.1/", func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource("{") }),
		endpoint("badurl", "ftp://127.0.0.1/x?appid=SECRET-in-url"),
		endpoint("bad name", "http://127.0.0.1/"),
		endpoint("badpolicy", "http://127.0.0.1/", func(e *httpcall.Endpoint) { e.Policy.Retry.Attempts = -1 }),
		endpoint("badcode", "http://127.0.0.1/", func(e *httpcall.Endpoint) { e.Expect.Status = []int{99} }),
		endpoint("dup", "http://127.0.0.1/"),
		endpoint("dup", "http://127.0.0.1/"),
		endpoint("ok", "http://127.0.0.1/"),
	}
	chains := []*httpcall.Chain{
		{Name: "missing", Endpoints: []string{"ok", "nope"}},
		{Name: "ok", Endpoints: []string{"ok"}},
		{Name: "empty"},
		{Name: "twice", Endpoints: []string{"ok", "ok"}},
		{Name: "uses-bad", Endpoints: []string{"badjq"}},
	}
	_, err = httpcall.New(h.store, endpoints, chains)
	if err == nil {
		t.Fatal("New accepted broken endpoints")
	}
	msg := err.Error()
	wantContains(t, "error", msg,
		"endpoint badjq: expect.jq: unexpected EOF",
		"endpoint badextract: extract: unexpected EOF",
		"endpoint badurl: url ftp://127.0.0.1/x?appid=REDACTED: want http:// or https:// and a host",
		`endpoint bad name: circuit name "bad name" has " "`,
		"endpoint badpolicy: attempts: must be at least 1, got -1",
		"endpoint badcode: status code 99 is not between 100 and 599",
		"endpoint dup: defined twice",
		`chain missing: no endpoint named "nope"`,
		"chain ok: an endpoint has the same name",
		"chain empty: no endpoints",
		`chain twice: endpoint "ok" listed twice`)
	if strings.Contains(msg, "SECRET") {
		t.Errorf("error shows a secret: %s", msg)
	}
	if strings.Contains(msg, "uses-bad") {
		t.Errorf("a chain was blamed for its broken endpoint: %s", msg)
	}
	if errors.Is(err, httpcall.ErrUnknown) {
		t.Error("config error matches ErrUnknown")
	}
}
