package httpcall_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
)

// held is an upstream that answers each request only once the test lets
// it: first is closed when the first request arrives, and every request
// then waits for until to be closed (answering code and body) or for its
// caller to cancel it, which cancelled reports.
type held struct {
	first     chan struct{}
	firstOnce sync.Once
	until     <-chan struct{}
	code      int
	body      string
	cancelled chan struct{} // one value per request its caller cancelled
}

func newHeld(until <-chan struct{}, code int, body string) *held {
	return &held{first: make(chan struct{}), until: until, code: code, body: body, cancelled: make(chan struct{}, 16)}
}

func (u *held) handle(w http.ResponseWriter, r *http.Request) {
	u.firstOnce.Do(func() { close(u.first) })
	select {
	case <-u.until:
		w.WriteHeader(u.code)
		_, _ = w.Write([]byte(u.body))
	case <-r.Context().Done():
		u.cancelled <- struct{}{}
	}
}

// never is a channel nothing closes: a held upstream waiting on it answers
// only a cancellation.
var never = make(chan struct{})

// waitEvent waits for ch, failing the test, as a process that timed out,
// when it has not come within a minute: far longer than any step here
// takes on a busy machine.
func waitEvent[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("timed out after 1m waiting for %s", what)
	}
}

// patient keeps an endpoint's attempt running for as long as a test holds
// its answer: no timeout of its own cuts it, however busy the machine.
func patient(e *httpcall.Endpoint) {
	e.Policy.Retry.Timeout = time.Hour
	e.Policy.Retry.Deadline = 2 * time.Hour
}

func once(e *httpcall.Endpoint) { e.Policy.Retry.Attempts = 1 }

// events records every circuit event the Client reports, by circuit.
type events struct {
	mu sync.Mutex
	by map[string][]breaker.Event
	on func(breaker.Event) // also called with each, under mu
}

func (ev *events) option() httpcall.Option {
	return httpcall.WithSyncListener(func(e breaker.Event) {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		if ev.by == nil {
			ev.by = map[string][]breaker.Event{}
		}
		ev.by[e.Circuit] = append(ev.by[e.Circuit], e)
		if ev.on != nil {
			ev.on(e)
		}
	})
}

func (ev *events) kinds(circuit string) []breaker.EventKind {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []breaker.EventKind
	for _, e := range ev.by[circuit] {
		out = append(out, e.Kind)
	}
	return out
}

// untouched checks that a cancelled hedge left no trace on its circuit: no
// failure counted or logged, no lease held, no event reported.
func (h *harness) untouched(ev *events, name string) {
	h.t.Helper()
	st, c := h.state(name), h.counts(name)
	if st.ConsecutiveFailures != 0 || st.LastFailure != "" || len(st.Probes) != 0 || st.Phase != "" && st.Phase != breaker.Closed {
		h.t.Errorf("%s's circuit after its hedge was cancelled: %+v; want it closed with no failure and no lease", name, st)
	}
	if c.Failures != 0 || c.Successes != 0 {
		h.t.Errorf("%s's counts after its hedge was cancelled: %+v; want no failure or success", name, c)
	}
	if logged, err := h.store.Events(context.Background(), name, time.Time{}); err != nil || len(logged) != 0 {
		h.t.Errorf("%s's event log after its hedge was cancelled: %+v, %v; want it empty", name, logged, err)
	}
	if k := ev.kinds(name); len(k) != 0 {
		h.t.Errorf("%s reported %v after its hedge was cancelled; want nothing", name, k)
	}
}

// hedgedPair serves primary and secondary behind a chain c of the two,
// with hedge: 1ms and stale: 1h, its events recorded in ev.
func hedgedPair(t *testing.T, primary, secondary *held, ev *events) *harness {
	t.Helper()
	ps, ss := serve(t, primary.handle), serve(t, secondary.handle)
	return newHarness(t,
		[]*httpcall.Endpoint{endpoint("primary", ps.URL, patient), endpoint("secondary", ss.URL, patient)},
		[]*httpcall.Chain{{Name: "c", Endpoints: []string{"primary", "secondary"}, Hedge: time.Millisecond, Stale: time.Hour}},
		ev.option())
}

// servesStale checks that the chain c of hedgedPair, both its circuits
// open now, serves the answer winner gave it, stale: the winner's answer
// was kept as the chain's last good answer.
func (h *harness) servesStale(winner string) {
	h.t.Helper()
	h.trip("primary")
	h.trip("secondary")
	res := h.mustCall("c")
	if res.Source != httpcall.SourceStale || res.Answered != winner || string(res.Body) != winner {
		h.t.Errorf("with every circuit open: %q from %s (answered by %s); want %s's stored answer, stale", res.Body, res.Source, res.Answered, winner)
	}
}

func TestHedgeFirstAnswerWinsAndTheOtherIsCancelled(t *testing.T) {
	for _, tc := range []struct {
		name, winner, loser string
	}{
		{"the hedge beats a primary that answers no one", "secondary", "primary"},
		{"the primary beats its hedge", "primary", "secondary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The loser answers no one; the winner answers once the
			// loser's request is in flight.
			loser := newHeld(never, 200, tc.loser)
			winner := newHeld(loser.first, 200, tc.winner)
			up := map[string]*held{tc.winner: winner, tc.loser: loser}
			ev := &events{}
			h := hedgedPair(t, up["primary"], up["secondary"], ev)

			res := h.mustCallWithin("c", "no hedge started beside the primary")
			if res.Source != tc.winner || string(res.Body) != tc.winner || res.Attempts != 2 {
				t.Fatalf("got %q from %s after %d attempts; want %s's answer after 2", res.Body, res.Source, res.Attempts, tc.winner)
			}
			reason := "cancelled: " + tc.winner + " answered first"
			want := []httpcall.EndpointError{{Name: tc.loser, Reason: reason, Cancelled: true}}
			if !slices.Equal(res.Errors, want) {
				t.Errorf("Errors = %+v, want %+v", res.Errors, want)
			}
			waitEvent(t, loser.cancelled, "the "+tc.loser+"'s server to see its request cancelled")
			h.untouched(ev, tc.loser)
			if c := h.counts(tc.winner); c.Successes != 1 {
				t.Errorf("%s's counts: %+v; want its success", tc.winner, c)
			}

			env, err := res.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			wantContains(t, "envelope", string(env), `"source":"`+tc.winner+`"`, `"attempts":2`,
				`"errors":[{"name":"`+tc.loser+`","reason":"`+reason+`","cancelled":true}]`)

			logs := h.logs.String()
			started := strings.Index(logs, `msg="hedge started" chain=c endpoint=secondary beside=primary after=1ms`)
			cancelled := strings.Index(logs, `msg="hedge cancelled" chain=c endpoint=`+tc.loser+` answered=`+tc.winner)
			answered := strings.Index(logs, "msg=answered chain=c endpoint="+tc.winner+" status=200 attempts=2")
			if started < 0 || cancelled < started || answered < cancelled {
				t.Errorf("want the log to say the hedge started, then that %s was cancelled, then the answer:\n%s", tc.loser, logs)
			}
			h.servesStale(tc.winner)
		})
	}
}

func TestCancelledHedgeGivesBackItsProbeLease(t *testing.T) {
	clock := newFakeClock()
	release := make(chan struct{})
	primary := newHeld(release, 200, "primary")
	secondary := newHeld(primary.first, 200, "secondary")
	ps := serve(t, sequence(status(500, ""), primary.handle)) // its first request trips its circuit
	ss := serve(t, secondary.handle)
	trips := func(e *httpcall.Endpoint) {
		e.Policy.Retry.Attempts = 1
		e.Policy.Breaker = breaker.Policy{TripAfter: 1, OpenFor: time.Minute}
	}
	ev := &events{}
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("primary", ps.URL, patient, trips), endpoint("secondary", ss.URL, patient)},
		[]*httpcall.Chain{{Name: "c", Endpoints: []string{"primary", "secondary"}, Hedge: time.Millisecond}},
		httpcall.WithClock(clock), ev.option())

	h.mustFail("primary")
	clock.Advance(2 * time.Minute) // half-open: the next call of primary is its probe
	before, beforeCounts := h.state("primary"), h.counts("primary")
	beforeEvents := ev.kinds("primary")

	res := h.mustCallWithin("c", "no hedge started beside the primary's probe, which answers no one")
	if res.Source != "secondary" || len(res.Errors) != 1 || !res.Errors[0].Cancelled {
		t.Fatalf("got %s with errors %+v; want secondary's answer and the primary's probe cancelled", res.Source, res.Errors)
	}
	waitEvent(t, primary.cancelled, "the primary's server to see its probe cancelled")
	after := h.state("primary")
	if v := after.View(clock.Now()); v.Phase != breaker.HalfOpen || v.ActiveProbes != 0 || len(after.Probes) != 0 {
		t.Errorf("primary after its probe was cancelled: %s with %d probes (%+v); want half-open with its lease given back", v.Phase, v.ActiveProbes, after.Probes)
	}
	if after.Reopens != before.Reopens || after.ConsecutiveFailures != before.ConsecutiveFailures || h.counts("primary") != beforeCounts {
		t.Errorf("primary after its probe was cancelled: %+v, %+v; want what it was before: %+v, %+v", after, h.counts("primary"), before, beforeCounts)
	}
	if k := ev.kinds("primary"); !slices.Equal(k, beforeEvents) {
		t.Errorf("primary's events: %v; want no more than before the call, %v", k, beforeEvents)
	}

	// The lease given back, the next caller probes at once and closes it.
	close(release)
	if res := h.mustCall("primary"); res.Source != "primary" || h.state("primary").Phase != breaker.Closed {
		t.Errorf("the next call: from %s, circuit %s; want primary's probe to close it", res.Source, h.state("primary").Phase)
	}
}

// callWithin calls name on a goroutine and returns its result, failing the
// test when it has not returned within a minute: the call is waiting for a
// timer it should not wait for.
func (h *harness) callWithin(name, why string) (*httpcall.Result, error) {
	h.t.Helper()
	type out struct {
		res *httpcall.Result
		err error
	}
	done := make(chan out, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		res, err := h.client.Call(ctx, name, httpcall.CallOptions{})
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(time.Minute):
		cancel()
		<-done
		h.t.Fatalf("Call(%s) still waiting after 1m (timed out): %s", name, why)
		return nil, nil
	}
}

// mustCallWithin is callWithin of a call that must answer.
func (h *harness) mustCallWithin(name, why string) *httpcall.Result {
	h.t.Helper()
	res, err := h.callWithin(name, why)
	if err != nil {
		h.t.Fatalf("Call(%s): %v\nlogs:\n%s", name, err, h.logs)
	}
	return res
}

func TestHedgeAfterAFastFailureStartsTheNextAtOnce(t *testing.T) {
	a := serve(t, status(500, ""))
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}, Hedge: time.Hour, Deadline: 2 * time.Hour}})

	res, err := h.callWithin("ab", "b did not start when a failed; it waited for the hour's hedge")
	if err != nil || res.Source != "b" || res.Attempts != 4 {
		t.Fatalf("got %+v, %v; want b's answer after a's 3 attempts and b's 1", res, err)
	}
	wantContains(t, "errors", reasons(res.Errors), "a: attempts exhausted after 3 attempts: status 500")
	if strings.Contains(h.logs.String(), "hedge started") {
		t.Errorf("a hedge was logged as started after a failure:\n%s", h.logs)
	}
}

func TestHedgeSkipsAnOpenCircuitAtOnce(t *testing.T) {
	a := serve(t, status(200, "a"))
	b := serve(t, status(200, "b"))
	h := newHarness(t,
		[]*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)},
		[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}, Hedge: time.Hour, Deadline: 2 * time.Hour}})
	h.trip("a")

	res, err := h.callWithin("ab", "b did not start when a's circuit was open; it waited for the hour's hedge")
	if err != nil || res.Source != "b" || res.Attempts != 1 || a.hits.Load() != 0 {
		t.Fatalf("got %+v, %v, %d requests to a; want b's answer, its 1 attempt, and none to a", res, err, a.hits.Load())
	}
	if len(res.Errors) != 1 || !res.Errors[0].Skipped || res.Errors[0].Name != "a" {
		t.Errorf("Errors = %+v; want a skipped", res.Errors)
	}
}

func TestHedgeServesStaleOnlyWhenEveryEndpointFailed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		primaryCode int
		wantSource  string
		wantErrors  string
	}{
		{"the primary answers after the hedge failed", 200, "primary",
			"secondary: attempts exhausted after 1 attempt: status 500 Internal Server Error"},
		{"both fail", 503, httpcall.SourceStale,
			"primary: attempts exhausted after 1 attempt: status 503 Service Unavailable | secondary: attempts exhausted after 1 attempt: status 500 Internal Server Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secondaryFailed := make(chan struct{})
			var failedOnce sync.Once
			ev := &events{on: func(e breaker.Event) {
				if e.Circuit == "secondary" && e.Kind == breaker.EventFailure {
					failedOnce.Do(func() { close(secondaryFailed) })
				}
			}}
			primary := newHeld(secondaryFailed, tc.primaryCode, "primary") // answers once the hedge has failed
			ps, ss := serve(t, primary.handle), serve(t, status(500, ""))
			h := newHarness(t,
				[]*httpcall.Endpoint{endpoint("primary", ps.URL, patient, once), endpoint("secondary", ss.URL, once)},
				[]*httpcall.Chain{{Name: "c", Endpoints: []string{"primary", "secondary"}, Hedge: time.Millisecond, Stale: time.Hour}},
				ev.option())
			if err := h.store.SaveAnswer(context.Background(), "c", answers.Answer{Source: "earlier", Status: 200, StoredAt: time.Now(), Body: []byte("old")}); err != nil {
				t.Fatal(err)
			}

			res := h.mustCallWithin("c", "no hedge started beside the primary, which answers once the hedge has failed")
			if res.Source != tc.wantSource || res.Attempts != 2 {
				t.Errorf("answered from %s after %d attempts; want %s after 2", res.Source, res.Attempts, tc.wantSource)
			}
			if got := reasons(res.Errors); got != tc.wantErrors {
				t.Errorf("errors:\n got %s\nwant %s", got, tc.wantErrors)
			}
		})
	}
}

func TestCallerCancelsAHedgedCall(t *testing.T) {
	primary, secondary := newHeld(never, 200, "primary"), newHeld(never, 200, "secondary")
	ev := &events{}
	h := hedgedPair(t, primary, secondary, ev)
	if err := h.store.SaveAnswer(context.Background(), "c", answers.Answer{Source: "earlier", Status: 200, StoredAt: time.Now(), Body: []byte("old")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-primary.first
		<-secondary.first
		cancel()
	}()
	res, err := h.client.Call(ctx, "c", httpcall.CallOptions{})
	if !errors.Is(err, context.Canceled) || res == nil || res.Source != "" {
		t.Fatalf("got %+v, %v; want the caller's cancellation, and no stale answer for a caller gone", res, err)
	}
	waitEvent(t, primary.cancelled, "the primary's server to see its request cancelled")
	waitEvent(t, secondary.cancelled, "the secondary's server to see its request cancelled")
	h.untouched(ev, "primary")
	h.untouched(ev, "secondary")
}

func TestHedgeChecks(t *testing.T) {
	short := func(e *httpcall.Endpoint) { e.Policy.Retry.Deadline = time.Second }
	eps := []*httpcall.Endpoint{endpoint("a", "http://127.0.0.1:1", short), endpoint("b", "http://127.0.0.1:1", short)}
	for _, tc := range []struct {
		chain httpcall.Chain
		want  string
	}{
		{httpcall.Chain{Name: "c", Endpoints: []string{"a", "b"}, Hedge: -time.Second}, "chain c: fresh, stale, deadline and hedge must not be negative"},
		{httpcall.Chain{Name: "c", Endpoints: []string{"a"}, Hedge: time.Millisecond}, "chain c: hedge needs two endpoints or more"},
		{httpcall.Chain{Name: "c", Endpoints: []string{"a", "b"}, Hedge: 2 * time.Second}, "chain c: hedge (2s) must be shorter than the chain's deadline (2s)"},
		{httpcall.Chain{Name: "c", Endpoints: []string{"a", "b"}, Hedge: 5 * time.Second, Deadline: 5 * time.Second}, "chain c: hedge (5s) must be shorter than the chain's deadline (5s)"},
	} {
		_, err := httpcall.New(mem.New(), eps, []*httpcall.Chain{&tc.chain})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New with %+v: %v; want %q", tc.chain, err, tc.want)
		}
	}
}

// scripted is an upstream inside a synctest bubble, as an http.RoundTripper:
// the n-th request to a host takes that host's n-th step (the last one
// repeating) to answer, unless its context ends first. Its log says when
// each request began, from start.
type scripted struct {
	start time.Time
	steps map[string][]step

	mu  sync.Mutex
	n   map[string]int
	log []string
}

type step struct {
	after time.Duration
	code  int
}

func newScripted(steps map[string][]step) *scripted {
	return &scripted{start: time.Now(), steps: steps, n: map[string]int{}}
}

func (s *scripted) RoundTrip(r *http.Request) (*http.Response, error) {
	host := r.URL.Host
	s.mu.Lock()
	s.n[host]++
	steps := s.steps[host]
	st := steps[min(s.n[host], len(steps))-1]
	s.log = append(s.log, fmt.Sprintf("%s#%d at %s", host, s.n[host], time.Since(s.start)))
	s.mu.Unlock()
	t := time.NewTimer(st.after)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: st.code, Status: fmt.Sprintf("%d %s", st.code, http.StatusText(st.code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: io.NopCloser(strings.NewReader(host)), Request: r}, nil
}

func (s *scripted) requests() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, ", ")
}

func TestHedgeCountsTheRetriesOfTheEndpointItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := newScripted(map[string][]step{
			"a": {{60 * time.Millisecond, 500}, {60 * time.Millisecond, 500}, {time.Hour, 200}},
			"b": {{0, 200}},
		})
		retries := func(e *httpcall.Endpoint) {
			e.Policy.Retry = fusebox.RetryPolicy{Attempts: 3, Timeout: time.Minute, Deadline: time.Hour,
				Backoff: fusebox.Backoff{First: 10 * time.Millisecond, Max: 10 * time.Millisecond, Jitter: fusebox.JitterNone}}
		}
		h := newHarness(t,
			[]*httpcall.Endpoint{endpoint("a", "http://a/", retries), endpoint("b", "http://b/", retries)},
			[]*httpcall.Chain{{Name: "ab", Endpoints: []string{"a", "b"}, Hedge: 100 * time.Millisecond}},
			httpcall.WithTransport(up), httpcall.WithClock(newFakeClock()))

		res := h.mustCall("ab")
		took := time.Since(up.start)
		// b starts 100ms after a did, during a's second attempt, not 100ms
		// after that attempt began (170ms).
		if got, want := up.requests(), "a#1 at 0s, a#2 at 70ms, b#1 at 100ms"; got != want {
			t.Errorf("requests: %s; want %s", got, want)
		}
		if res.Source != "b" || res.Attempts != 3 || took != 100*time.Millisecond {
			t.Errorf("answered by %s after %d attempts and %s; want b after 3 and 100ms", res.Source, res.Attempts, took)
		}
		want := []httpcall.EndpointError{{Name: "a", Reason: "cancelled: b answered first", Cancelled: true}}
		if !slices.Equal(res.Errors, want) {
			t.Errorf("Errors = %+v, want %+v", res.Errors, want)
		}
		// a's first failure counts; its second attempt, cancelled, does not.
		if st, c := h.state("a"), h.counts("a"); st.ConsecutiveFailures != 1 || c.Failures != 1 {
			t.Errorf("a: %d consecutive failures, %d in all; want 1 and 1", st.ConsecutiveFailures, c.Failures)
		}
	})
}

func TestHedgedChainEndsAtItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hangs := []step{{time.Hour, 200}}
		up := newScripted(map[string][]step{"a": hangs, "b": hangs, "c": hangs, "d": {{0, 200}}})
		var eps []*httpcall.Endpoint
		for _, n := range []string{"a", "b", "c", "d"} {
			eps = append(eps, endpoint(n, "http://"+n+"/", patient, once))
		}
		h := newHarness(t, eps,
			[]*httpcall.Chain{{Name: "all", Endpoints: []string{"a", "b", "c", "d"}, Hedge: 100 * time.Millisecond, Deadline: 250 * time.Millisecond}},
			httpcall.WithTransport(up), httpcall.WithClock(newFakeClock()))

		res, ce := h.mustFail("all")
		if took := time.Since(up.start); took != 250*time.Millisecond {
			t.Errorf("the call ended after %s; want its deadline, 250ms", took)
		}
		if got, want := up.requests(), "a#1 at 0s, b#1 at 100ms, c#1 at 200ms"; got != want {
			t.Errorf("requests: %s; want %s (d would start after the deadline)", got, want)
		}
		if len(res.Errors) != 4 || res.Attempts != 3 || ce.AllSkipped {
			t.Fatalf("errors %s after %d attempts; want four, after 3", reasons(res.Errors), res.Attempts)
		}
		for _, e := range res.Errors[:3] {
			if !strings.Contains(e.Reason, "chain deadline of 250ms") || e.Cancelled {
				t.Errorf("%s: %q; want a failure cut by the chain deadline of 250ms", e.Name, e.Reason)
			}
			if c := h.counts(e.Name); c.Failures != 1 {
				t.Errorf("%s: %d failures counted; want 1, as without a hedge", e.Name, c.Failures)
			}
		}
		if e := res.Errors[3]; e.Name != "d" || e.Reason != "not tried: chain deadline of 250ms reached" {
			t.Errorf("d: %+v; want it not tried", e)
		}
	})
}
