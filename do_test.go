package fusebox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

// Every Do test runs in a synctest bubble: time is fake, so backoffs,
// timeouts and deadlines pass at once and elapsed times are exact.

// doPolicy: 3 attempts, waits of exactly 1s then 2s, 5s per attempt, a
// minute in all; the circuit opens after 3 failures for 30s.
func doPolicy() fusebox.Policy {
	return fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 3,
			Backoff:  fusebox.Backoff{First: time.Second, Multiplier: 2, Max: 10 * time.Second, Jitter: fusebox.JitterNone},
			Timeout:  5 * time.Second,
			Deadline: time.Minute,
		},
		Breaker: breaker.Policy{TripAfter: 3, OpenFor: 30 * time.Second},
	}.WithDefaults()
}

// logBuffer collects log lines from every goroutine of a test.
type logBuffer = testenv.Buffer

// env is one test's circuits, store, clock and log.
type env struct {
	t     *testing.T
	store fusebox.Store
	mem   *mem.Store
	clock fusebox.Clock
	log   *logBuffer
	c     *fusebox.Circuits
}

func newEnv(t *testing.T, p fusebox.Policy, wrap func(fusebox.Store) fusebox.Store) *env {
	e := &env{t: t, mem: mem.New(), clock: fusebox.WallClock{}, log: &logBuffer{}}
	e.store = e.mem
	if wrap != nil {
		e.store = wrap(e.mem)
	}
	e.c = e.circuits(p)
	return e
}

// circuits returns another caller sharing e's store and log.
func (e *env) circuits(p fusebox.Policy) *fusebox.Circuits {
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	return fusebox.New(e.store, fusebox.WithPolicy(p), fusebox.WithLogger(logger), fusebox.WithClock(e.clock))
}

func (e *env) state(name string) breaker.State {
	e.t.Helper()
	st, err := e.mem.Load(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) view(name string) breaker.View {
	st := e.state(name)
	return st.View(e.clock.Now())
}

func (e *env) skips(name string) uint64 { return e.counts(name).Skips }

func (e *env) counts(name string) fusebox.Counts {
	e.t.Helper()
	c, err := e.mem.Counts(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// open trips the circuit as three failing calls from elsewhere would.
func (e *env) open(name string) {
	e.t.Helper()
	other := fusebox.New(e.mem, fusebox.WithClock(e.clock), fusebox.WithPolicy(fusebox.Policy{
		Retry:   fusebox.RetryPolicy{Attempts: 1},
		Breaker: doPolicy().Breaker,
	}))
	for range doPolicy().Breaker.TripAfter {
		other.Do(context.Background(), name, func(context.Context) error { return errRefused })
	}
	if v := e.view(name); v.Phase != breaker.Open {
		e.t.Fatalf("circuit is %s after %d failures", v.Phase, doPolicy().Breaker.TripAfter)
	}
}

var (
	epoch      = time.Unix(0, 0).UTC() // where a machine without an RTC battery boots
	errRefused = errors.New("connection refused")
	// errBlock, in a script, makes the attempt wait until its context ends.
	errBlock = errors.New("block until the attempt's context ends")
)

// script is an fn whose attempts return results in turn.
type script struct {
	results []error
	calls   atomic.Int32
}

func fails(results ...error) *script { return &script{results: results} }

func (s *script) fn(ctx context.Context) error {
	i := int(s.calls.Add(1)) - 1
	if i >= len(s.results) {
		return errors.New("unexpected attempt")
	}
	if s.results[i] == errBlock {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.results[i]
}

func (s *script) called() int { return int(s.calls.Load()) }

func wantExhausted(t *testing.T, err error, why string, attempts int) *fusebox.ExhaustedError {
	t.Helper()
	var ex *fusebox.ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("Do = %v (%T), want an *ExhaustedError", err, err)
	}
	if !strings.HasPrefix(ex.Describe(""), why+" after ") || ex.Attempts != attempts || ex.Name != "api" {
		t.Fatalf("ExhaustedError = {%q, Attempts: %d, Name: %q}, want {%q..., %d, \"api\"}", ex.Describe(""), ex.Attempts, ex.Name, why, attempts)
	}
	return ex
}

func TestDoRetryLoop(t *testing.T) {
	err1, err2, err3 := errors.New("refused (1)"), errors.New("refused (2)"), errors.New("refused (3)")
	tests := []struct {
		name        string
		policy      func(*fusebox.RetryPolicy)
		results     []error
		wantCalls   int
		wantElapsed time.Duration
		wantWhy     string // "" when Do succeeds
		wantIs      error
		wantMsg     string
	}{
		{name: "succeeds on the first attempt", results: []error{nil},
			wantCalls: 1},
		{name: "retries with backoff, then succeeds", results: []error{err1, err2, nil},
			wantCalls: 3, wantElapsed: 3 * time.Second},
		{name: "every attempt fails: the last error is wrapped", results: []error{err1, err2, err3},
			wantCalls: 3, wantElapsed: 3 * time.Second, wantWhy: "attempts exhausted", wantIs: err3,
			wantMsg: "api: attempts exhausted after 3 attempts: refused (3)"},
		{name: "a single attempt is not retried", policy: func(r *fusebox.RetryPolicy) { r.Attempts = 1 }, results: []error{err1},
			wantCalls: 1, wantWhy: "attempts exhausted", wantIs: err1, wantMsg: "after 1 attempt: refused (1)"},
		{name: "a permanent failure is not retried", results: []error{&fusebox.Failure{Err: err1, Permanent: true}},
			wantCalls: 1, wantWhy: "not retryable", wantIs: err1},
		{name: "a Failure's reason replaces its error's text", results: []error{&fusebox.Failure{Err: errors.New("GET https://user:secret@api/"), Reason: "HTTP 503", Permanent: true}},
			wantCalls: 1, wantWhy: "not retryable", wantMsg: "api: not retryable after 1 attempt: HTTP 503"},
		{name: "the deadline caps the loop: no wait reaches it",
			policy:    func(r *fusebox.RetryPolicy) { r.Attempts, r.Deadline = 10, 5*time.Second },
			results:   []error{err1, err2, err3},
			wantCalls: 3, wantElapsed: 3 * time.Second, wantWhy: "deadline too close to retry", wantIs: err3},
		{name: "an attempt that hangs is cut at its timeout",
			policy:    func(r *fusebox.RetryPolicy) { r.Attempts, r.Timeout = 2, 2*time.Second },
			results:   []error{errBlock, errBlock},
			wantCalls: 2, wantElapsed: 5 * time.Second, wantWhy: "attempts exhausted", wantIs: context.DeadlineExceeded,
			wantMsg: "timeout after 2s: context deadline exceeded"},
		{name: "an attempt that hangs is cut at the deadline",
			policy:    func(r *fusebox.RetryPolicy) { r.Timeout, r.Deadline = 10*time.Second, 3*time.Second },
			results:   []error{errBlock},
			wantCalls: 1, wantElapsed: 3 * time.Second, wantWhy: "deadline reached", wantIs: context.DeadlineExceeded,
			wantMsg: "deadline of 3s reached"},
		{name: "Retry-After replaces the backoff",
			results:   []error{&fusebox.Failure{Err: err1, RetryAfter: 7 * time.Second}, nil},
			wantCalls: 2, wantElapsed: 7 * time.Second},
		{name: "Retry-After past the deadline fails over at once",
			results:   []error{&fusebox.Failure{Err: err1, RetryAfter: 2 * time.Minute}},
			wantCalls: 1, wantWhy: "server asked to wait 2m0s, past the deadline", wantIs: err1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := doPolicy()
				p.Breaker.TripAfter = 100 // this table is about the retry loop alone
				if tt.policy != nil {
					tt.policy(&p.Retry)
				}
				e := newEnv(t, p, nil)
				s := fails(tt.results...)
				start := time.Now()
				err := e.c.Do(context.Background(), "api", s.fn)
				if elapsed := time.Since(start); elapsed != tt.wantElapsed {
					t.Errorf("took %s, want %s", elapsed, tt.wantElapsed)
				}
				if s.called() != tt.wantCalls {
					t.Errorf("fn called %d times, want %d", s.called(), tt.wantCalls)
				}
				if tt.wantWhy == "" {
					if err != nil {
						t.Fatalf("Do = %v, want nil", err)
					}
					return
				}
				wantExhausted(t, err, tt.wantWhy, tt.wantCalls)
				if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
					t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("Do = %q, want it to contain %q", err, tt.wantMsg)
				}
			})
		})
	}
}

func TestDoLogsTheStoryOfACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, doPolicy(), nil)
		if err := e.c.Do(context.Background(), "api", fails(errRefused, errRefused, nil).fn); err != nil {
			t.Fatal(err)
		}
		// Attempts, waits and a success after retries are Info: a logger at
		// the CLI's default level (LevelNotice) prints none of them.
		want := `level=INFO msg="attempt failed" circuit=api attempt=1 attempts=3 reason="connection refused"
level=INFO msg="waiting before retry" circuit=api wait=1s
level=INFO msg="attempt failed" circuit=api attempt=2 attempts=3 reason="connection refused"
level=INFO msg="waiting before retry" circuit=api wait=2s
level=INFO msg="attempt succeeded" circuit=api attempt=3
`
		if got := e.log.String(); got != want {
			t.Errorf("log:\n%s\nwant:\n%s", got, want)
		}
	})
}

func TestDoOpensTheCircuitThenFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, doPolicy(), nil)
		err := e.c.Do(ctx, "api", fails(errRefused, errRefused, errRefused).fn)
		wantExhausted(t, err, "attempts exhausted", 3)
		if got := e.log.Lines("circuit opened", "for=30s", `reason="3 consecutive failures"`); len(got) != 1 {
			t.Errorf("log has no opening line:\n%s", e.log)
		}

		called := false
		err = e.c.Do(ctx, "api", func(context.Context) error { called = true; return nil })
		var oe *breaker.OpenError
		if !errors.Is(err, breaker.ErrOpen) || !errors.As(err, &oe) || oe.ReopensIn != 30*time.Second {
			t.Fatalf("Do on an open circuit = %v, want ErrOpen reopening in 30s", err)
		}
		if called {
			t.Error("fn ran on an open circuit")
		}
		if n := e.skips("api"); n != 1 {
			t.Errorf("skips = %d, want 1", n)
		}
		if got := e.log.Lines("skipped: circuit api is open (probe in 30s)"); len(got) != 1 {
			t.Errorf("log has no skip line:\n%s", e.log)
		}

		time.Sleep(30 * time.Second)
		if err := e.c.Do(ctx, "api", fails(nil).fn); err != nil {
			t.Fatalf("probe = %v, want nil", err)
		}
		if v := e.view("api"); v.Phase != breaker.Closed {
			t.Errorf("after a successful probe the circuit is %s", v.Phase)
		}
		for _, want := range []string{"probing half-open circuit", `circuit closed" circuit=api reason="probe succeeded"`} {
			if len(e.log.Lines(want)) != 1 {
				t.Errorf("log lacks %q:\n%s", want, e.log)
			}
		}
	})
}

func TestDoStopsWhenAnotherCallerOpensTheCircuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		patient := doPolicy()
		patient.Retry.Attempts = 5
		patient.Retry.Backoff.First = 10 * time.Second
		hasty := doPolicy()
		hasty.Retry.Attempts = 2
		hasty.Retry.Backoff.First = 100 * time.Millisecond
		e := newEnv(t, patient, nil)

		s := fails(errRefused, errRefused, errRefused, errRefused, errRefused)
		done := make(chan error)
		start := time.Now()
		go func() { done <- e.c.Do(ctx, "api", s.fn) }()

		time.Sleep(time.Second) // the patient caller is waiting out its 10s backoff
		err := e.circuits(hasty).Do(ctx, "api", fails(errRefused, errRefused).fn)
		wantExhausted(t, err, "attempts exhausted", 2)
		if v := e.view("api"); v.Phase != breaker.Open {
			t.Fatalf("the other caller's failures left the circuit %s", v.Phase)
		}

		err = <-done
		ex := wantExhausted(t, err, "circuit opened", 1)
		if !errors.Is(ex, errRefused) {
			t.Errorf("%v does not wrap the last attempt's error", err)
		}
		if s.called() != 1 {
			t.Errorf("fn called %d times, want 1: no attempt after the circuit opened", s.called())
		}
		if elapsed := time.Since(start); elapsed != 10*time.Second {
			t.Errorf("stopped after %s, want at the end of the 10s wait", elapsed)
		}
		if len(e.log.Lines("circuit opened while waiting to retry; giving up")) != 1 {
			t.Errorf("log:\n%s", e.log)
		}
	})
}

func TestDoLetsExactlyOneProbeThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, doPolicy(), nil)
		e.open("api")
		time.Sleep(30 * time.Second)

		const callers = 10
		var probes atomic.Int32
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			c := e.circuits(doPolicy()) // another process, as it were
			wg.Go(func() {
				errs[i] = c.Do(ctx, "api", func(context.Context) error {
					probes.Add(1)
					time.Sleep(time.Second) // every other caller arrives while this probe runs
					return nil
				})
			})
		}
		wg.Wait()

		if n := probes.Load(); n != 1 {
			t.Fatalf("%d callers probed the half-open circuit, want 1", n)
		}
		refused := 0
		for _, err := range errs {
			var oe *breaker.OpenError
			switch {
			case err == nil:
			case errors.As(err, &oe) && oe.Probing:
				refused++
			default:
				t.Errorf("caller got %v, want nil or a probing OpenError", err)
			}
		}
		if refused != callers-1 {
			t.Errorf("%d callers refused, want %d", refused, callers-1)
		}
		if n := e.skips("api"); n != callers-1 {
			t.Errorf("skips = %d, want %d", n, callers-1)
		}
		if v := e.view("api"); v.Phase != breaker.Closed || v.ActiveProbes != 0 {
			t.Errorf("after the probe: %+v", v)
		}
	})
}

func TestDoFailedProbeReopensTheCircuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, doPolicy(), nil)
		e.open("api")
		time.Sleep(30 * time.Second)
		s := fails(errRefused, errRefused, errRefused)
		err := e.c.Do(context.Background(), "api", s.fn)
		wantExhausted(t, err, "circuit opened", 1)
		if s.called() != 1 {
			t.Errorf("fn called %d times: a failed probe was retried", s.called())
		}
		// Opened for 60s after the probe failed; the caller gave up at once
		// instead of waiting out a backoff.
		if v := e.view("api"); v.Phase != breaker.Open || v.ReopensIn != 60*time.Second {
			t.Errorf("after a failed probe: %+v, want open for another 60s", v)
		}
	})
}

func TestDoCancellation(t *testing.T) {
	t.Run("cancelled mid-attempt: context.Canceled, nothing recorded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			ctx, cancel := context.WithCancel(context.Background())
			err := e.c.Do(ctx, "api", func(ctx context.Context) error {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v, want context.Canceled", err)
			}
			var ex *fusebox.ExhaustedError
			if errors.As(err, &ex) {
				t.Errorf("Do = %v: a cancelled call is not a failed one", err)
			}
			st := e.state("api")
			if e.counts("api").Failures != 0 || st.ConsecutiveFailures != 0 {
				t.Errorf("a cancelled attempt was recorded: %+v", st)
			}
			if evs, _ := e.mem.Events(context.Background(), "api", time.Time{}); len(evs) != 0 {
				t.Errorf("events = %+v", evs)
			}
		})
	})
	t.Run("cancelled while probing: the lease is freed at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			e.open("api")
			time.Sleep(30 * time.Second)
			var heard []breaker.EventKind
			c := fusebox.New(e.store, fusebox.WithPolicy(doPolicy()), fusebox.WithSyncListener(func(ev breaker.Event) {
				heard = append(heard, ev.Kind)
			}))
			ctx, cancel := context.WithCancel(context.Background())
			err := c.Do(ctx, "api", func(ctx context.Context) error {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v, want context.Canceled", err)
			}
			if len(heard) != 0 {
				t.Errorf("the cancelled probe reported %v; want nothing: it neither failed nor succeeded", heard)
			}
			v := e.view("api")
			if v.Phase != breaker.HalfOpen || v.ActiveProbes != 0 {
				t.Fatalf("after a cancelled probe: %+v, want half-open with no probe", v)
			}
			if c := e.counts("api"); c.Failures != 3 {
				t.Errorf("Failures = %d: the cancelled probe counted", c.Failures)
			}
			s := fails(nil)
			if err := e.c.Do(context.Background(), "api", s.fn); err != nil || s.called() != 1 {
				t.Fatalf("the next caller got %v (fn called %d times), want to probe at once", err, s.called())
			}
			if v := e.view("api"); v.Phase != breaker.Closed {
				t.Errorf("circuit is %s", v.Phase)
			}
		})
	})
	t.Run("cancelled while waiting to retry: returns at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				time.Sleep(500 * time.Millisecond)
				cancel()
			}()
			s := fails(errRefused, nil)
			start := time.Now()
			err := e.c.Do(ctx, "api", s.fn)
			if !errors.Is(err, context.Canceled) || time.Since(start) != 500*time.Millisecond || s.called() != 1 {
				t.Fatalf("Do = %v after %s and %d attempts, want context.Canceled after 500ms and 1", err, time.Since(start), s.called())
			}
			if c := e.counts("api"); c.Failures != 1 {
				t.Errorf("Failures = %d, want the one attempt that failed", c.Failures)
			}
		})
	})
}

func TestDoNeutralFailuresDoNotTrip(t *testing.T) {
	tests := []struct {
		name    string
		failure error
	}{
		{"this machine's network is down", &fusebox.Failure{Err: errors.New("network is unreachable"), Local: true}},
		{"the request was wrong (4xx)", &fusebox.Failure{Err: errors.New("HTTP 404"), Neutral: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := doPolicy()
				p.Retry.Attempts = 5
				p.Retry.Deadline = time.Hour
				e := newEnv(t, p, nil)
				s := fails(tt.failure, tt.failure, tt.failure, tt.failure, tt.failure)
				wantExhausted(t, e.c.Do(context.Background(), "api", s.fn), "attempts exhausted", 5)
				st := e.state("api")
				if v := e.view("api"); v.Phase != breaker.Closed || e.counts("api").Failures != 0 || st.ConsecutiveFailures != 0 {
					t.Errorf("after 5 neutral failures: phase %s, %+v", v.Phase, st)
				}
				evs, _ := e.mem.Events(context.Background(), "api", time.Time{})
				if len(evs) != 5 || evs[0].Kind != breaker.EventNeutralFailure {
					t.Errorf("events = %+v, want 5 neutral failures", evs)
				}
			})
		})
	}
	t.Run("permanent failures do count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, doPolicy(), nil)
			for range 3 {
				e.c.Do(context.Background(), "api", fails(&fusebox.Failure{Err: errRefused, Permanent: true}).fn)
			}
			if v := e.view("api"); v.Phase != breaker.Open {
				t.Errorf("after 3 permanent failures the circuit is %s", v.Phase)
			}
		})
	})
}

func TestDoA429OpensTheCircuitForEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, doPolicy(), nil)
		tooMany := &fusebox.Failure{Err: errors.New("HTTP 429"), RetryAfter: 2 * time.Minute, OpenFor: 2 * time.Minute}
		err := e.c.Do(context.Background(), "api", fails(tooMany).fn)
		wantExhausted(t, err, "server asked to wait 2m0s, past the deadline", 1)
		if v := e.view("api"); v.Phase != breaker.Open || v.ReopensIn != 2*time.Minute {
			t.Errorf("after a 429: %+v, want open for 2m", v)
		}
		err = e.circuits(doPolicy()).Do(context.Background(), "api", fails().fn)
		if !errors.Is(err, breaker.ErrOpen) {
			t.Errorf("another caller got %v, want ErrOpen", err)
		}
	})
}

// brokenStore is a Store that cannot be read, written, or both.
type brokenStore struct {
	fusebox.Store
	load, update, count bool
}

var errStore = errors.New("state store: no space left on device")

func (s *brokenStore) Load(ctx context.Context, name string) (breaker.State, error) {
	if s.load {
		return breaker.State{}, errStore
	}
	return s.Store.Load(ctx, name)
}

func (s *brokenStore) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	if s.update {
		return breaker.State{}, errStore
	}
	return s.Store.Update(ctx, name, fn)
}

func (s *brokenStore) Count(ctx context.Context, name string, c fusebox.Counts) error {
	if s.count {
		return errStore
	}
	return s.Store.Count(ctx, name, c)
}

func TestDoFailsOpenWhenTheStoreIsBroken(t *testing.T) {
	tests := []struct {
		name    string
		store   brokenStore
		circuit breaker.Phase // how the circuit stands in the store
		results []error
		wantErr error
	}{
		{"unreadable store: the call runs", brokenStore{load: true, update: true, count: true}, breaker.Closed, []error{nil}, nil},
		{"read-only store: the call runs", brokenStore{update: true, count: true}, breaker.Closed, []error{nil}, nil},
		{"read-only store: the call retries, warning once", brokenStore{update: true, count: true}, breaker.Closed, []error{errRefused, errRefused, nil}, nil},
		{"unreadable store hiding an open circuit: the call runs", brokenStore{load: true}, breaker.Open, []error{nil}, nil},
		{"store that cannot lock a half-open circuit: the call runs", brokenStore{update: true}, breaker.HalfOpen, []error{nil}, nil},
		{"skip counter unwritable: the open circuit still refuses", brokenStore{count: true}, breaker.Open, nil, breaker.ErrOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				broken := tt.store
				e := newEnv(t, doPolicy(), func(s fusebox.Store) fusebox.Store { broken.Store = s; return &broken })
				switch tt.circuit {
				case breaker.Open:
					e.open("api")
				case breaker.HalfOpen:
					e.open("api")
					time.Sleep(30 * time.Second)
				}
				s := fails(tt.results...)
				err := e.c.Do(context.Background(), "api", s.fn)
				if tt.wantErr == nil && err != nil || !errors.Is(err, tt.wantErr) {
					t.Fatalf("Do = %v, want %v", err, tt.wantErr)
				}
				if s.called() != len(tt.results) {
					t.Errorf("fn called %d times, want %d", s.called(), len(tt.results))
				}
				if got := e.log.Lines("level=ERROR", "state store unusable; running without circuit protection", errStore.Error()); len(got) != 1 {
					t.Errorf("store errors: %d, want exactly 1; log:\n%s", len(got), e.log)
				}
				if len(tt.results) == 1 && len(e.log.Lines("level=")) != 2 { // the error and the success (Debug)
					t.Errorf("want the store warning alone; log:\n%s", e.log)
				}
			})
		})
	}
}

func TestDoRejectsBadCircuitNames(t *testing.T) {
	e := newEnv(t, doPolicy(), nil)
	for _, name := range []string{"", "..", "a/b", strings.Repeat("x", 65)} {
		s := fails(nil)
		if err := e.c.Do(context.Background(), name, s.fn); err == nil || s.called() != 0 {
			t.Errorf("Do(%q) = %v after %d calls, want an error and no call", name, err, s.called())
		}
	}
	if names, _ := e.mem.Names(context.Background()); len(names) != 0 {
		t.Errorf("store holds %q", names)
	}
}

func TestCircuitsPolicies(t *testing.T) {
	c := fusebox.New(mem.New(), fusebox.WithPolicies(func(name string) fusebox.Policy {
		if name == "slow" {
			return fusebox.Policy{Retry: fusebox.RetryPolicy{Timeout: time.Minute}}
		}
		return fusebox.Policy{}
	}))
	// Each circuit's attempt runs under its own policy's timeout: the
	// named one's, or the default's (10s).
	synctest.Test(t, func(t *testing.T) {
		for name, want := range map[string]time.Duration{"slow": time.Minute, "other": 10 * time.Second} {
			c.Do(context.Background(), name, func(ctx context.Context) error {
				if dl, ok := ctx.Deadline(); !ok || time.Until(dl) != want {
					t.Errorf("%s: the attempt's deadline is %s away, want %s", name, time.Until(dl), want)
				}
				return nil
			})
		}
	})
}

// bootClock is a boot-aware Clock inside a synctest bubble: its boot clock
// follows the bubble's time; its wall clock can be set, and the machine
// rebooted, by the test.
type bootClock struct {
	mu         sync.Mutex
	boot       string
	booted     time.Time     // bubble time at boot
	wallOffset time.Duration // wall clock minus bubble time
}

func newBootClock() *bootClock {
	return &bootClock{boot: "boot-a", booted: time.Now().Add(-time.Hour)}
}

func (c *bootClock) Now() breaker.Instant {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	// Round(0) drops the monotonic reading, so wall-clock arithmetic sees
	// the jumps, as it would across processes.
	return breaker.Instant{Wall: now.Add(c.wallOffset).Round(0), Boot: c.boot, BootTime: now.Sub(c.booted)}
}

func (c *bootClock) jumpWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wallOffset += d
}

func (c *bootClock) reboot(boot string, wall time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.boot, c.booted, c.wallOffset = boot, now, wall.Sub(now)
}

func TestDoAcrossClockJumps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		clk := newBootClock()
		e := newEnv(t, doPolicy(), nil)
		e.clock = clk
		e.c = e.circuits(doPolicy())
		e.open("api")

		wantOpen := func(when string, reopensIn time.Duration) {
			t.Helper()
			s := fails(nil)
			err := e.c.Do(ctx, "api", s.fn)
			var oe *breaker.OpenError
			if !errors.As(err, &oe) || oe.ReopensIn != reopensIn || s.called() != 0 {
				t.Fatalf("%s: Do = %v (fn called %d times), want open for %s", when, err, s.called(), reopensIn)
			}
		}
		wantOpen("just opened", 30*time.Second)
		clk.jumpWall(time.Hour)
		wantOpen("wall clock an hour ahead", 30*time.Second)
		clk.jumpWall(-2 * time.Hour)
		wantOpen("wall clock an hour behind", 30*time.Second)
		time.Sleep(10 * time.Second)
		wantOpen("10s later by the boot clock", 20*time.Second)

		clk.reboot("boot-b", epoch)
		wantOpen("rebooted into 1970", 30*time.Second) // the full period from now, never more
		if st := e.state("api"); st.OpenedAt.Boot != "boot-b" {
			t.Errorf("OpenedAt = %+v, not rebased onto the new boot", st.OpenedAt)
		}
		clk.jumpWall(time.Since(epoch) + 55*365*24*time.Hour) // NTP sets the clock right
		wantOpen("NTP fixed the clock", 30*time.Second)

		time.Sleep(30 * time.Second)
		if err := e.c.Do(ctx, "api", fails(nil).fn); err != nil {
			t.Fatalf("probe after the open period = %v", err)
		}
		if v := e.view("api"); v.Phase != breaker.Closed {
			t.Errorf("circuit is %s", v.Phase)
		}
	})
}

// TestDoLogsAnOutageOnce: the call that opens a circuit logs it at Warn; a
// failed probe, which opens it again, only at Info and says so in its
// error (ExhaustedError.Reopened); the probe that closes it logs at Notice.
func TestDoLogsAnOutageOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := doPolicy()
		p.Retry.Attempts = 3
		e := newEnv(t, p, nil)
		err := e.c.Do(ctx, "api", fails(errRefused, errRefused, errRefused).fn)
		var ee *fusebox.ExhaustedError
		if !errors.As(err, &ee) || ee.Reopened {
			t.Fatalf("first failure: %v, want an ExhaustedError, not Reopened", err)
		}
		if got := e.log.Lines("level=WARN", "circuit opened"); len(got) != 1 {
			t.Errorf("want one WARN circuit opened; log:\n%s", e.log)
		}
		time.Sleep(30 * time.Second)
		err = e.c.Do(ctx, "api", fails(errRefused).fn)
		if !errors.As(err, &ee) || !ee.Reopened {
			t.Fatalf("failed probe: %v, want Reopened", err)
		}
		if got := e.log.Lines("level=WARN"); len(got) != 1 {
			t.Errorf("a failed probe logged a warning; log:\n%s", e.log)
		}
		if got := e.log.Lines("level=INFO", "circuit reopened"); len(got) != 1 {
			t.Errorf("want the reopening at INFO; log:\n%s", e.log)
		}
		time.Sleep(time.Minute)
		if err := e.c.Do(ctx, "api", fails(nil).fn); err != nil {
			t.Fatal(err)
		}
		if got := e.log.Lines("level=INFO+2", "circuit closed"); len(got) != 1 {
			t.Errorf("want the close at Notice; log:\n%s", e.log)
		}
	})
}

// TestDoSaysWhetherAFailureWasToldAlready: a failed call's Told says its
// outage was told by the call that opened the circuit, so that fusebox run
// prints nothing for it; every other failure is news.
func TestDoSaysWhetherAFailureWasToldAlready(t *testing.T) {
	// whileOthersOpen is an attempt that waits until another caller has
	// opened the circuit, then fails with err.
	whileOthersOpen := func(e *env, err error) func(context.Context) error {
		return func(context.Context) error {
			e.open("api")
			return err
		}
	}
	for _, tc := range []struct {
		name          string
		call          func(e *env) error
		wantOvertaken bool
		wantReopened  bool
	}{
		{"a call whose failures open the circuit is news", func(e *env) error {
			return e.c.Do(context.Background(), "api", fails(errRefused, errRefused, errRefused).fn)
		}, false, false},
		{"a call that fails while the circuit stays closed is news", func(e *env) error {
			return e.circuits(withAttempts(2)).Do(context.Background(), "api", fails(errRefused, errRefused).fn)
		}, false, false},
		{"a call whose last attempt fails once another has opened the circuit was told", func(e *env) error {
			return e.circuits(withAttempts(1)).Do(context.Background(), "api", whileOthersOpen(e, errRefused))
		}, true, false},
		{"a call waiting to retry when another opens the circuit was told", func(e *env) error {
			slow := withAttempts(3)
			slow.Retry.Backoff.First = 10 * time.Second
			first := true
			return e.circuits(slow).Do(context.Background(), "api", func(context.Context) error {
				if first {
					first = false
					go e.open("api") // during the 10s wait
				}
				return errRefused
			})
		}, true, false},
		{"a failed probe was told", func(e *env) error {
			e.open("api")
			time.Sleep(30 * time.Second)
			return e.c.Do(context.Background(), "api", fails(errRefused).fn)
		}, false, true},
		{"a neutral failure once another has opened the circuit is news", func(e *env) error {
			neutral := &fusebox.Failure{Err: errors.New("command not found"), Neutral: true, Permanent: true}
			return e.circuits(withAttempts(1)).Do(context.Background(), "api", whileOthersOpen(e, neutral))
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, doPolicy(), nil)
				var ee *fusebox.ExhaustedError
				if err := tc.call(e); !errors.As(err, &ee) {
					t.Fatalf("Do = %v, want an *ExhaustedError", err)
				}
				if ee.Overtaken != tc.wantOvertaken || ee.Reopened != tc.wantReopened {
					t.Errorf("Overtaken %v, Reopened %v; want %v, %v (%s)", ee.Overtaken, ee.Reopened, tc.wantOvertaken, tc.wantReopened, ee.Describe(""))
				}
			})
		})
	}
}

func withAttempts(n int) fusebox.Policy {
	p := doPolicy()
	p.Retry.Attempts = n
	return p
}

// busyStore is a Store whose Update gives up on the lock, as a store whose
// other callers keep it busy does: it works, it is only busy.
type busyStore struct{ fusebox.Store }

func (s *busyStore) Update(context.Context, string, func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	return breaker.State{}, fmt.Errorf("lock api: %w after 5s", fusebox.ErrLockTimeout)
}

// A success whose state update gives up on a busy lock is counted all the
// same (a failure is counted before the lock); on a broken store nothing
// is, and the call runs either way.
func TestASuccessIsCountedWhenTheStoreIsOnlyBusy(t *testing.T) {
	for _, tt := range []struct {
		name  string
		wrap  func(fusebox.Store) fusebox.Store
		count uint64
	}{
		{"busy: counted", func(s fusebox.Store) fusebox.Store { return &busyStore{s} }, 1},
		{"broken: not counted", func(s fusebox.Store) fusebox.Store { return &brokenStore{Store: s, update: true} }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, doPolicy(), nil)
				// A failure first, so that the success must change the
				// state (a quiet one is only counted, without the lock).
				p := doPolicy()
				p.Retry.Attempts = 1
				if err := e.circuits(p).Do(context.Background(), "api", fails().fn); err == nil {
					t.Fatal("the failing call succeeded")
				}
				e.store = tt.wrap(e.mem)
				if err := e.circuits(doPolicy()).Do(context.Background(), "api", func(context.Context) error { return nil }); err != nil {
					t.Fatalf("the call on a %s store: %v, want it run", tt.name, err)
				}
				c, err := e.mem.Counts(context.Background(), "api")
				if err != nil {
					t.Fatal(err)
				}
				if c.Successes != tt.count {
					t.Errorf("%d successes counted, want %d", c.Successes, tt.count)
				}
				if !strings.Contains(e.log.String(), "state store unusable") {
					t.Errorf("the store's trouble was not logged:\n%s", e.log.String())
				}
			})
		})
	}
}
