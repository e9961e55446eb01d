package httpcall_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/memlimit"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestMain(m *testing.M) {
	httpcall.IsolateJQ(memlimit.Child) // the tests' jq children are this binary, limited as the command limits its own
	goleak.VerifyTestMain(m)
}

// fastPolicy retries within milliseconds, so tests never sleep for long.
func fastPolicy() fusebox.Policy {
	return fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 3,
			Backoff:  fusebox.Backoff{First: time.Millisecond, Max: 5 * time.Millisecond, Jitter: fusebox.JitterNone},
			Timeout:  time.Second,
			Deadline: 3 * time.Second,
		},
		Breaker: breaker.Policy{TripAfter: 5, OpenFor: time.Minute},
	}
}

// endpoint returns a GET endpoint with the default retry_on and fastPolicy,
// changed by mods.
func endpoint(name, url string, mods ...func(*httpcall.Endpoint)) *httpcall.Endpoint {
	e := &httpcall.Endpoint{Name: name, URL: url, RetryOn: httpcall.DefaultRetryOn(), Policy: fastPolicy()}
	for _, m := range mods {
		m(e)
	}
	return e
}

// newFakeClock returns a clock that moves only when told, from a fixed day.
func newFakeClock() *testenv.Clock {
	return testenv.NewClock(breaker.Instant{Wall: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)})
}

// harness is a Client over an in-memory store, logging at debug level into a
// buffer.
type harness struct {
	t      *testing.T
	client *httpcall.Client
	store  *mem.Store
	logs   *testenv.Buffer
}

func newHarness(t *testing.T, endpoints []*httpcall.Endpoint, chains []*httpcall.Chain, opts ...httpcall.Option) *harness {
	t.Helper()
	h := &harness{t: t, store: mem.New(), logs: &testenv.Buffer{}}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts = append([]httpcall.Option{httpcall.WithLogger(logger)}, opts...)
	c, err := httpcall.New(h.store, endpoints, chains, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	h.client = c
	return h
}

func (h *harness) call(name string) (*httpcall.Result, error) {
	h.t.Helper()
	return h.client.Call(context.Background(), name, httpcall.CallOptions{})
}

// mustCall calls name and fails the test unless it answers.
func (h *harness) mustCall(name string) *httpcall.Result {
	h.t.Helper()
	res, err := h.call(name)
	if err != nil {
		h.t.Fatalf("Call(%s): %v\nlogs:\n%s", name, err, h.logs)
	}
	return res
}

// mustFail calls name and fails the test unless the call fails with a
// *CallError.
func (h *harness) mustFail(name string) (*httpcall.Result, *httpcall.CallError) {
	h.t.Helper()
	res, err := h.call(name)
	var ce *httpcall.CallError
	if !errors.As(err, &ce) {
		h.t.Fatalf("Call(%s) = %+v, %v; want a *CallError", name, res, err)
	}
	if res == nil {
		h.t.Fatalf("Call(%s) returned a nil Result with its error", name)
	}
	return res, ce
}

func (h *harness) state(name string) breaker.State {
	h.t.Helper()
	st, err := h.store.Load(context.Background(), name)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// trip forces a circuit open for an hour.
func (h *harness) counts(name string) fusebox.Counts {
	h.t.Helper()
	c, err := h.store.Counts(context.Background(), name)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func (h *harness) trip(name string) {
	h.t.Helper()
	_, err := h.store.Update(context.Background(), name, func(st *breaker.State) ([]breaker.Event, bool) {
		return st.Trip(fusebox.WallClock{}.Now(), time.Hour, ""), true
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// server is an httptest server on 127.0.0.1 that counts requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func serve(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// status answers every request with code and body.
func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}

// sequence answers the n-th request with handlers[n], repeating the last.
func sequence(handlers ...http.HandlerFunc) http.HandlerFunc {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(handlers)-1)
		handlers[i](w, r)
	}
}

// silentServer accepts connections and never writes a byte.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

func reasons(errs []httpcall.EndpointError) string {
	var parts []string
	for _, e := range errs {
		parts = append(parts, e.Name+": "+e.Reason)
	}
	return strings.Join(parts, " | ")
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}
