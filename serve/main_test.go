package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/internal/testenv"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(floodChildEnv); spec != "" {
		os.Exit(floodChild(spec))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testenv.Exit))
}

// fastPolicy retries within milliseconds; one failed call opens the circuit.
func fastPolicy() fusebox.Policy {
	return fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 2,
			Backoff:  fusebox.Backoff{First: time.Millisecond, Max: 2 * time.Millisecond, Jitter: fusebox.JitterNone},
			Timeout:  5 * time.Second,
			Deadline: 10 * time.Second,
		},
		Breaker: breaker.Policy{TripAfter: 2, OpenFor: time.Minute},
	}
}

func endpoint(name, url string, mods ...func(*httpcall.Endpoint)) *httpcall.Endpoint {
	e := &httpcall.Endpoint{Name: name, URL: url, Method: "GET", RetryOn: httpcall.DefaultRetryOn(), Policy: fastPolicy()}
	for _, m := range mods {
		m(e)
	}
	return e
}

// daemon is a Server serving on a real loopback socket.
type daemon struct {
	*serve.Server
	addr  string
	store fusebox.Admin
	dir   string
}

// start serves targets from a file store in a fresh dir (or dir, when given
// in o.Store's place by startIn) until the test ends.
func start(t testing.TB, targets serve.Targets, o serve.Options) *daemon {
	t.Helper()
	dir := t.TempDir()
	return startIn(t, dir, targets, o)
}

func startIn(t testing.TB, dir string, targets serve.Targets, o serve.Options) *daemon {
	t.Helper()
	store, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen == "" {
		o.Listen = ln.Addr().String()
	} else {
		// The requested host with the port the kernel chose.
		h, _, _ := net.SplitHostPort(o.Listen)
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		o.Listen = net.JoinHostPort(h, p)
	}
	if o.Store == nil {
		o.Store = store
	} else {
		store.Close()
	}
	srv, err := serve.New(targets, o)
	if err != nil {
		ln.Close()
		store.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		store.Close()
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return &daemon{Server: srv, addr: "127.0.0.1:" + port, store: store, dir: dir}
}

// reply is an answer read whole.
type reply struct {
	code   int
	header http.Header
	body   string
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, r.body)
	}
	return v
}

// do sends a request to the daemon with a fresh connection each time.
func (d *daemon) do(t testing.TB, method, path string, mods ...func(*http.Request)) reply {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		m(req)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (d *daemon) get(t *testing.T, path string, mods ...func(*http.Request)) reply {
	t.Helper()
	return d.do(t, http.MethodGet, path, mods...)
}

// raw writes request text as it is on a new connection and returns the
// status line of the answer.
func (d *daemon) raw(t *testing.T, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", request, err)
	}
	return strings.TrimSpace(line)
}
