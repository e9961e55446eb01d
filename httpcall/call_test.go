package httpcall_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestChainFallsBackInOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	record := func(name string, h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			h(w, r)
		}
	}
	a := serve(t, record("a", status(500, "")))
	b := serve(t, record("b", status(503, "")))
	c := serve(t, record("c", status(200, "from c")))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL), endpoint("c", c.URL)},
		[]*httpcall.Chain{{Name: "all", Endpoints: []string{"a", "b", "c"}}})

	res := h.mustCall("all")
	if res.Source != "c" || res.Answered != "c" || string(res.Body) != "from c" || res.Status != 200 {
		t.Errorf("got source %q answered %q status %d body %q; want c's 200 \"from c\"", res.Source, res.Answered, res.Status, res.Body)
	}
	if res.Attempts != 7 {
		t.Errorf("Attempts = %d, want 7 (3 for a, 3 for b, 1 for c)", res.Attempts)
	}
	if got := strings.Join(order, ""); got != "aaabbbc" {
		t.Errorf("requests went %s, want aaabbbc", got)
	}
	wantContains(t, "errors", reasons(res.Errors), "a: attempts exhausted after 3 attempts: status 500 Internal Server Error",
		"b: attempts exhausted after 3 attempts: status 503 Service Unavailable")
	wantContains(t, "log", h.logs.String(), `msg=answered chain=all endpoint=c status=200`, `reason="status 500 Internal Server Error"`)
}

func TestOpenCircuitIsSkippedWithoutARequest(t *testing.T) {
	a := serve(t, status(500, ""))
	b := serve(t, status(200, "b"))
	clock := newFakeClock()
	trips := func(e *httpcall.Endpoint) {
		e.Policy.Retry.Attempts = 1
		e.Policy.Breaker = breaker.Policy{TripAfter: 1, OpenFor: 25 * time.Second}
	}
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL, trips), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}}},
		httpcall.WithClock(clock))

	h.mustFail("a") // opens a's circuit
	if h.state("a").Phase != breaker.Open {
		t.Fatalf("a's circuit is %s, want open", h.state("a").Phase)
	}
	hits := a.hits.Load()

	start := time.Now()
	res := h.mustCall("ab")
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("skipping took %s", took)
	}
	if a.hits.Load() != hits {
		t.Errorf("a got %d requests while its circuit was open", a.hits.Load()-hits)
	}
	if res.Source != "b" {
		t.Errorf("Source = %q, want b", res.Source)
	}
	want := httpcall.EndpointError{Name: "a", Reason: "circuit open (probe in 25s)", Skipped: true}
	if len(res.Errors) != 1 || res.Errors[0] != want {
		t.Errorf("Errors = %+v, want [%+v]", res.Errors, want)
	}
	if res.Attempts != 1 {
		t.Errorf("Attempts = %d, want 1", res.Attempts)
	}
	wantContains(t, "log", h.logs.String(), "skipped: circuit a is open")
}

func TestEveryCircuitOpenIsAllSkipped(t *testing.T) {
	a := serve(t, status(200, "a"))
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}}})
	h.trip("a")
	h.trip("b")

	res, err := h.call("ab")
	if !errors.Is(err, httpcall.ErrAllSkipped) || errors.Is(err, httpcall.ErrAllFailed) {
		t.Fatalf("err = %v; want ErrAllSkipped only", err)
	}
	if res == nil || len(res.Errors) != 2 || !res.Errors[0].Skipped || !res.Errors[1].Skipped || res.Attempts != 0 {
		t.Fatalf("res = %+v; want two skips and no attempt", res)
	}
	if a.hits.Load()+b.hits.Load() != 0 {
		t.Error("a request reached a server behind an open circuit")
	}
	wantContains(t, "error", err.Error(), "ab: every circuit is open", "a: circuit forced open (closes in 1h)")
}

func TestEveryEndpointFailedIsAllFailed(t *testing.T) {
	a := serve(t, status(500, ""))
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}}})
	h.trip("b")

	res, ce := h.mustFail("ab")
	if !errors.Is(ce, httpcall.ErrAllFailed) || errors.Is(ce, httpcall.ErrAllSkipped) || ce.AllSkipped {
		t.Errorf("err = %v; want ErrAllFailed only", ce)
	}
	if res.Attempts != 3 || len(res.Errors) != 2 {
		t.Errorf("res = %+v; want 3 attempts and two errors", res)
	}
	env, err := res.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "envelope", string(env), `"source":null`, `"status":null`, `"attempts":3`, `"body":null`,
		`{"name":"a","reason":"attempts exhausted after 3 attempts: status 500 Internal Server Error"}`,
		`{"name":"b","reason":"circuit forced open (closes in 1h)","skipped":true}`)
}

func TestUnknownName(t *testing.T) {
	h := newHarness(t, nil, nil)
	_, err := h.call("nope")
	if !errors.Is(err, httpcall.ErrUnknown) {
		t.Errorf("err = %v, want ErrUnknown", err)
	}
}

func TestRetryAfterWithinTheDeadlineIsHonoured(t *testing.T) {
	// Retry-After dates have whole seconds; a clock 40ms before one makes
	// the server ask for a 40ms wait.
	clock := newFakeClock()
	retryAt := clock.Now().Wall
	clock.Advance(-40 * time.Millisecond)
	var mu sync.Mutex
	var times []time.Time
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		times = append(times, time.Now())
		first := len(times) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", retryAt.Format(http.TimeFormat))
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	// The computed backoff (10s) does not fit in the deadline: only the
	// server's Retry-After lets the call retry.
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.Policy.Retry.Backoff = fusebox.Backoff{First: 10 * time.Second, Max: 10 * time.Second, Jitter: fusebox.JitterNone}
		e.Policy.Retry.Deadline = time.Second
	})}, nil, httpcall.WithClock(clock))

	res := h.mustCall("svc")
	if res.Attempts != 2 || string(res.Body) != "ok" {
		t.Fatalf("res = %+v, want ok after 2 attempts", res)
	}
	if gap := times[1].Sub(times[0]); gap < 40*time.Millisecond || gap > 900*time.Millisecond {
		t.Errorf("waited %s between attempts, want the 40ms the server asked for", gap)
	}
	wantContains(t, "log", h.logs.String(), "waiting before retry", "wait=40ms")
}

func TestRetryAfterPastTheDeadlineFailsOverAtOnce(t *testing.T) {
	a := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(503)
	})
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}}})

	start := time.Now()
	res := h.mustCall("ab")
	if took := time.Since(start); took > 2*time.Second { // waiting out Retry-After takes 120s
		t.Errorf("fail-over took %s", took)
	}
	if res.Source != "b" || a.hits.Load() != 1 {
		t.Errorf("source %q after %d requests to a; want b after 1", res.Source, a.hits.Load())
	}
	wantContains(t, "errors", reasons(res.Errors), "a: server asked to wait 2m0s, past the deadline")
}

func TestTooManyRequestsWithRetryAfterOpensTheCircuit(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(429)
	})
	clock := newFakeClock()
	h := newHarness(t, []*httpcall.Endpoint{endpoint("api", s.URL)}, nil, httpcall.WithClock(clock))

	h.mustFail("api")
	st := h.state("api")
	if st.Phase != breaker.Open || time.Duration(st.OpenPeriod) != 30*time.Second {
		t.Fatalf("circuit %s for %s, want open for 30s", st.Phase, time.Duration(st.OpenPeriod))
	}
	_, ce := h.mustFail("api")
	if !ce.AllSkipped || s.hits.Load() != 1 {
		t.Errorf("second call: %v after %d requests; want a skip and 1 request", ce, s.hits.Load())
	}
	wantContains(t, "error", ce.Error(), "circuit open (probe in 30s)")
}

func TestTooManyRequestsWithoutRetryAfterIsRetried(t *testing.T) {
	s := serve(t, sequence(status(429, ""), status(200, "ok")))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("api", s.URL)}, nil)
	res := h.mustCall("api")
	if res.Attempts != 2 || h.state("api").Phase != breaker.Closed {
		t.Errorf("attempts %d, circuit %s; want 2 and closed", res.Attempts, h.state("api").Phase)
	}
}

func TestFreshAnswerIsServedWithoutARequest(t *testing.T) {
	s := serve(t, status(200, `{"temp":21.5}`))
	clock := newFakeClock()
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("owm", s.URL, func(e *httpcall.Endpoint) { e.Fresh = time.Minute })},
		[]*httpcall.Chain{{Name: "weather", Endpoints: []string{"owm"}, Fresh: 10 * time.Minute}},
		httpcall.WithClock(clock))

	if res := h.mustCall("owm"); res.Source != "owm" || s.hits.Load() != 1 {
		t.Fatalf("first call: source %q after %d requests", res.Source, s.hits.Load())
	}
	clock.Advance(59 * time.Second)
	res := h.mustCall("owm")
	if res.Source != httpcall.SourceFresh || res.Answered != "owm" || res.Age != 59*time.Second ||
		string(res.Body) != `{"temp":21.5}` || res.Status != 200 || res.Attempts != 0 {
		t.Errorf("second call = %+v; want the fresh stored answer, 59s old", res)
	}
	if s.hits.Load() != 1 {
		t.Errorf("a fresh answer made a request")
	}
	env, _ := res.Envelope()
	wantContains(t, "envelope", string(env), `"source":"fresh"`, `"answered":"owm"`, `"age_seconds":59`, `"body":{"temp":21.5}`)

	clock.Advance(time.Second) // a minute old: no longer fresh
	if res := h.mustCall("owm"); res.Source != "owm" || s.hits.Load() != 2 {
		t.Errorf("expired: source %q after %d requests; want owm after 2", res.Source, s.hits.Load())
	}

	// A chain keeps its answer under its own name.
	h.mustCall("weather")
	if res := h.mustCall("weather"); res.Source != httpcall.SourceFresh || s.hits.Load() != 3 {
		t.Errorf("chain: source %q after %d requests; want fresh after 3", res.Source, s.hits.Load())
	}
}

func TestAnswerIsStoredOnlyWithFreshOrStale(t *testing.T) {
	s := serve(t, status(200, "ok"))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("plain", s.URL)},
		[]*httpcall.Chain{{Name: "kept", Endpoints: []string{"plain"}, Stale: time.Hour}})
	h.mustCall("plain")
	h.mustCall("kept")
	if _, ok, _ := h.store.LoadAnswer(context.Background(), "plain"); ok {
		t.Error("an endpoint without fresh or stale had its answer stored")
	}
	if a, ok, _ := h.store.LoadAnswer(context.Background(), "kept"); !ok || a.Source != "plain" || string(a.Body) != "ok" {
		t.Errorf("chain with stale: stored %+v, %v", a, ok)
	}
}

func TestStaleAnswerIsServedWhenEverythingFails(t *testing.T) {
	var mu sync.Mutex
	down := false
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			w.WriteHeader(502)
			return
		}
		_, _ = w.Write([]byte("21.5"))
	})
	clock := newFakeClock()
	h := newHarness(t, []*httpcall.Endpoint{endpoint("owm", s.URL)},
		[]*httpcall.Chain{{Name: "weather", Endpoints: []string{"owm"}, Stale: time.Hour}},
		httpcall.WithClock(clock))
	h.mustCall("weather")
	mu.Lock()
	down = true
	mu.Unlock()
	clock.Advance(20 * time.Minute)

	res := h.mustCall("weather")
	if res.Source != httpcall.SourceStale || res.Answered != "owm" || res.Age != 20*time.Minute || string(res.Body) != "21.5" {
		t.Errorf("res = %+v; want owm's stale answer, 20m old", res)
	}
	if res.Attempts != 3 || len(res.Errors) != 1 {
		t.Errorf("res = %+v; want the 3 failed attempts reported", res)
	}
	wantContains(t, "log", h.logs.String(), "level=INFO", "serving a stale answer, 20m old, from owm") // an answer: nothing by default

	if _, err := h.client.Call(context.Background(), "weather", httpcall.CallOptions{NoStale: true}); !errors.Is(err, httpcall.ErrAllFailed) {
		t.Errorf("--no-stale: err = %v, want ErrAllFailed", err)
	}
	clock.Advance(41 * time.Minute) // over an hour old
	if _, err := h.call("weather"); !errors.Is(err, httpcall.ErrAllFailed) {
		t.Errorf("expired stale answer: err = %v, want ErrAllFailed", err)
	}
}

func TestStaleAnswerIsServedWhenEveryCircuitIsOpen(t *testing.T) {
	s := serve(t, status(200, "ok"))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("a", s.URL, func(e *httpcall.Endpoint) { e.Stale = time.Hour })}, nil)
	h.mustCall("a")
	h.trip("a")
	if res := h.mustCall("a"); res.Source != httpcall.SourceStale || !res.Errors[0].Skipped {
		t.Errorf("res = %+v, want a stale answer after a skip", res)
	}
}

func TestChainDeadlineIsSharedSoEveryEndpointGetsATurn(t *testing.T) {
	silent := "http://" + silentServer(t)
	ok := serve(t, status(200, "ok"))
	hangs := func(e *httpcall.Endpoint) {
		e.Policy.Retry.Timeout = time.Minute // only the chain's deadline can cut it
		e.Policy.Retry.Attempts = 2
	}
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("hangs", silent, hangs), endpoint("also-hangs", silent, hangs), endpoint("ok", ok.URL)},
		[]*httpcall.Chain{
			{Name: "weather", Endpoints: []string{"hangs", "ok"}, Deadline: 2 * time.Second},
			{Name: "three", Endpoints: []string{"hangs", "also-hangs", "ok"}, Deadline: 3 * time.Second},
			{Name: "down", Endpoints: []string{"hangs", "also-hangs"}, Deadline: 400 * time.Millisecond},
		})

	// The primary hangs: it has half the deadline, and the fallback the rest.
	start := time.Now()
	res := h.mustCall("weather")
	took := time.Since(start)
	if res.Source != "ok" {
		t.Fatalf("source %q, errors %v: the fallback was not reached within the chain's deadline", res.Source, reasons(res.Errors))
	}
	if took < time.Second {
		t.Errorf("answered after %s: the hanging primary was cut before its 1s share", took)
	}
	wantContains(t, "errors", reasons(res.Errors), "hangs: its 1s share of the chain deadline of 2s reached after 1 attempt: no response")

	// Three endpoints: a third each, the second of what is left.
	if res := h.mustCall("three"); res.Source != "ok" {
		t.Fatalf("source %q, errors %v", res.Source, reasons(res.Errors))
	}

	// Every endpoint hangs: the last one has what is left, and the call
	// ends at the deadline.
	res, ce := h.mustFail("down")
	if !errors.Is(ce, httpcall.ErrAllFailed) || len(res.Errors) != 2 {
		t.Fatalf("err %v, errors %v", ce, reasons(res.Errors))
	}
	wantContains(t, "errors", reasons(res.Errors), "also-hangs: chain deadline of 400ms reached after 1 attempt")
}

// A caller's deadline sooner than the chain's is shared the same way, and
// named as the caller's in the reasons.
func TestCallersDeadlineIsSharedLikeTheChains(t *testing.T) {
	silent := "http://" + silentServer(t)
	ok := serve(t, status(200, "ok"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("hangs", silent, func(e *httpcall.Endpoint) { e.Policy.Retry.Timeout = time.Minute }), endpoint("ok", ok.URL)},
		[]*httpcall.Chain{{Name: "weather", Endpoints: []string{"hangs", "ok"}, Deadline: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := h.client.Call(ctx, "weather", httpcall.CallOptions{})
	if err != nil || res.Source != "ok" {
		t.Fatalf("got %+v, %v; want ok's answer within the caller's deadline", res, err)
	}
	wantContains(t, "errors", reasons(res.Errors), "share of the caller's deadline reached")
}

func TestCancelledCallStops(t *testing.T) {
	silent := "http://" + silentServer(t)
	h := newHarness(t, []*httpcall.Endpoint{endpoint("hangs", silent)}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	res, err := h.client.Call(ctx, "hangs", httpcall.CallOptions{})
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Errorf("got %+v, %v; want a Result and context.Canceled", res, err)
	}
	if took := time.Since(start); took > 900*time.Millisecond { // an attempt's timeout is 1s
		t.Errorf("took %s after cancel", took)
	}
	if n := h.counts("hangs").Failures; n != 0 {
		t.Errorf("a cancelled call counted %d failures", n)
	}
}

func TestUnreadableRetryAfterFallsBackToBackoff(t *testing.T) {
	s := serve(t, sequence(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "soon, maybe")
		w.WriteHeader(503)
	}, status(200, "ok")))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL)}, nil)
	if res := h.mustCall("svc"); res.Attempts != 2 {
		t.Errorf("Attempts = %d, want 2", res.Attempts)
	}
	wantContains(t, "log", h.logs.String(), "ignoring unreadable Retry-After", "wait=1ms")
}

func TestConcurrentCalls(t *testing.T) {
	a := serve(t, status(500, ""))
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}, Stale: time.Hour}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 5 {
				res, err := h.call("ab")
				if err != nil || string(res.Body) != "b" {
					t.Errorf("got %+v, %v", res, err)
				}
			}
		})
	}
	wg.Wait()
}

func TestWithHTTPClient(t *testing.T) {
	agents := make(chan string, 1)
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { agents <- r.UserAgent() })
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.Headers = map[string]string{"User-Agent": "my-script/1"}
	})}, nil, httpcall.WithHTTPClient(hc))
	h.mustCall("svc")
	if got := <-agents; got != "my-script/1" {
		t.Errorf("User-Agent %q", got)
	}
}

// BeforeRequest runs before each request and never for a call the open
// circuit ends: fusebox call arms its signal handlers there.
func TestBeforeRequestRunsBeforeEachRequestOnly(t *testing.T) {
	u := serve(t, status(500, ""))
	h := newHarness(t, []*httpcall.Endpoint{endpoint("a", u.URL, func(e *httpcall.Endpoint) {
		e.Policy.Retry.Attempts = 2
		e.Policy.Breaker = breaker.Policy{TripAfter: 2, OpenFor: time.Hour}
	})}, nil)
	calls := 0
	opt := httpcall.CallOptions{BeforeRequest: func() { calls++ }}
	if _, err := h.client.Call(context.Background(), "a", opt); err == nil || calls != 2 {
		t.Fatalf("two failing attempts: err %v, BeforeRequest ran %d times; want an error and 2", err, calls)
	}
	var ce *httpcall.CallError
	if _, err := h.client.Call(context.Background(), "a", opt); !errors.As(err, &ce) || !ce.AllSkipped || calls != 2 {
		t.Errorf("the open circuit: err %v, BeforeRequest ran %d times in all; want every endpoint skipped and still 2", err, calls)
	}
}

// deadlineAnswers is a store of answers that keeps the deadline each read
// of a stored answer was given.
type deadlineAnswers struct {
	*mem.Store
	mu    sync.Mutex
	reads []time.Time
}

func (s *deadlineAnswers) LoadAnswer(ctx context.Context, name string) (answers.Answer, bool, error) {
	dl, _ := ctx.Deadline()
	s.mu.Lock()
	s.reads = append(s.reads, dl)
	s.mu.Unlock()
	return s.Store.LoadAnswer(ctx, name)
}

// The stale answer read after every endpoint ran out the caller's deadline
// may go on past it for CallOptions.StoreGrace, not for the 5s a store gets
// otherwise: the daemon's caller waits only that much longer.
func TestAStaleAnswerReadAfterTheDeadlineEndsWithinTheGrace(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	store := &deadlineAnswers{Store: mem.New()}
	c, err := httpcall.New(store, []*httpcall.Endpoint{endpoint("hangs", s.URL)},
		[]*httpcall.Chain{{Name: "kept", Endpoints: []string{"hangs"}, Stale: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	for _, grace := range []time.Duration{0, 150 * time.Millisecond} {
		store.reads = nil
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		dl, _ := ctx.Deadline()
		_, err := c.Call(ctx, "kept", httpcall.CallOptions{StoreGrace: grace})
		cancel()
		if err == nil {
			t.Fatalf("grace %s: the hanging endpoint answered", grace)
		}
		if len(store.reads) != 1 {
			t.Fatalf("grace %s: %d reads of the stored answer, want 1", grace, len(store.reads))
		}
		got := store.reads[0].Sub(dl)
		switch {
		case grace > 0 && got != grace:
			t.Errorf("the stored answer's read may end %s past the caller's deadline, want its grace %s", got, grace)
		case grace == 0 && got < 4*time.Second:
			t.Errorf("without a grace, the stored answer's read may end %s past the caller's deadline, want about 5s", got)
		}
	}
}
