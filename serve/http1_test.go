package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The tests here hold http1 to what net/http's server does with the same
// handler and bytes on the wire: each case runs against both.

// echo answers with what it was asked: method, target, host, the body it
// read and some headers, and follows a few instructions in the query.
func echo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("panic") {
		panic("asked to")
	}
	if v := q.Get("status"); v != "" {
		var code int
		fmt.Sscan(v, &code)
		w.WriteHeader(code)
		return
	}
	if q.Has("html") {
		io.WriteString(w, "<html><body>sniffed</body></html>")
		return
	}
	if q.Has("inject") {
		w.Header().Set("X-Bad", "a\r\nSet-Cookie: evil=1")
	}
	if q.Has("close") {
		w.Header().Set("Connection", "close")
	}
	var body []byte
	if !q.Has("ignore-body") {
		body, _ = io.ReadAll(r.Body)
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s host=%s body=%q x=%q", r.Method, r.RequestURI, r.Host, body, r.Header.Get("X-Test"))
}

// servers runs handler under http.Server and under http1, each on a
// loopback port, until the test ends; it returns their addresses, net/http's
// first.
func servers(t *testing.T, handler http.Handler, o func(*http1)) (std, ours string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var open sync.WaitGroup // net/http's connections, some lingering after their answer
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 8 << 10,
		ErrorLog: slog.NewLogLogger(quiet.Handler(), slog.LevelDebug),
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				open.Add(1)
			case http.StateClosed, http.StateHijacked:
				open.Done()
			}
		}}
	go hs.Serve(ln1)
	t.Cleanup(func() {
		hs.Close()
		open.Wait()
	})

	h1 := newHTTP1(handler)
	if o != nil {
		o(h1)
	}
	ours, done := serveOn(t, h1)
	t.Cleanup(func() {
		h1.close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln1.Addr().String(), ours
}

// newHTTP1 is an http1 for handler with the tests' settings: an 8 KiB
// header limit, timeouts long enough never to fire unless a test shortens
// them, and no log.
func newHTTP1(handler http.Handler) *http1 {
	return &http1{handler: handler, readHeaderTimeout: 5 * time.Second, idleTimeout: time.Minute, maxHeaderBytes: 8 << 10,
		base: context.Background(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// serveOn serves s on a loopback port and returns its address and what its
// serve returns.
func serveOn(t *testing.T, s *http1) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.serve(ln) }()
	return ln.Addr().String(), served
}

// dial connects to addr until the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer is a response as read off the wire.
type answer struct {
	code    int
	header  http.Header
	body    string
	proto   string
	sawCont bool // a 100 Continue came first
}

// exchange writes raw to a new connection to addr, reads n answers (the
// methods say which were to HEAD), and reports whether the server then
// closed the connection: it reads on until EOF when closed is expected,
// and otherwise sends one more request, which must be answered.
func exchange(t *testing.T, addr, raw string, methods []string, wantClosed bool) ([]answer, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // a safety net: every read below ends on an event
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []answer
	for _, m := range methods {
		var a answer
		for {
			resp, err := http.ReadResponse(br, &http.Request{Method: m})
			if err != nil {
				t.Fatalf("reading answer %d: %v", len(out)+1, err)
			}
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("reading body %d: %v", len(out)+1, err)
			}
			if resp.StatusCode == http.StatusContinue {
				a.sawCont = true
				continue
			}
			a.code, a.header, a.body, a.proto = resp.StatusCode, resp.Header, string(b), resp.Proto
			break
		}
		out = append(out, a)
	}
	if wantClosed {
		rest, err := io.ReadAll(br)
		if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("after the answers: %v", err)
		}
		if len(rest) > 0 {
			t.Fatalf("more after the answers: %q", rest)
		}
		return out, true
	}
	if _, err := io.WriteString(c, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return out, true
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return out, true
	}
	resp.Body.Close()
	return out, false
}

func TestHTTP1AnswersAsNetHTTPDoes(t *testing.T) {
	std, ours := servers(t, http.HandlerFunc(echo), nil)
	big := strings.Repeat("b", maxDiscard+10)
	cases := []struct {
		name    string
		raw     string
		methods []string
		closed  bool
	}{
		{"get", "GET /p?a=1 HTTP/1.1\r\nHost: x\r\nX-Test: t\r\n\r\n", []string{"GET"}, false},
		{"pipelined", "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET", "GET"}, false},
		{"connection close", "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", []string{"GET"}, true},
		{"handler says close", "GET /?close HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, true},
		{"http/1.0", "GET / HTTP/1.0\r\n\r\n", []string{"GET"}, true},
		{"http/1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", []string{"GET"}, false},
		{"post", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", []string{"POST"}, false},
		{"chunked post", "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", []string{"POST"}, false},
		{"body left unread", "POST /?ignore-body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", []string{"POST"}, false},
		{"big body left unread", "POST /?ignore-body HTTP/1.1\r\nHost: x\r\nContent-Length: " + fmt.Sprint(len(big)) + "\r\n\r\n" + big, []string{"POST"}, true},
		{"expect 100-continue", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nhi", []string{"POST"}, false},
		{"expect something else", "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: tea\r\n\r\nhi", []string{"POST"}, true},
		{"head", "HEAD /p HTTP/1.1\r\nHost: x\r\n\r\n", []string{"HEAD"}, false},
		{"no content", "GET /?status=204 HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, false},
		{"sniffed type", "GET /?html HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, false},
		{"header injection", "GET /?inject HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, false},
		{"absolute-form", "GET http://y/p HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, false},
		{"missing host", "GET / HTTP/1.1\r\n\r\n", []string{"GET"}, true},
		{"two hosts", "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", []string{"GET"}, true},
		{"malformed host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", []string{"GET"}, true},
		{"malformed request line", "GET\r\nHost: x\r\n\r\n", []string{"GET"}, true},
		{"malformed header", "GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", []string{"GET"}, true},
		{"header too large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", []string{"GET"}, true},
		{"unknown transfer encoding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", []string{"POST"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, wantClosed := exchange(t, std, c.raw, c.methods, c.closed)
			got, gotClosed := exchange(t, ours, c.raw, c.methods, c.closed)
			if gotClosed != wantClosed {
				t.Errorf("connection closed: %v, net/http: %v", gotClosed, wantClosed)
			}
			for i := range want {
				w, g := want[i], got[i]
				if g.code != w.code || g.body != w.body || g.sawCont != w.sawCont {
					t.Errorf("answer %d: %d %q (100 Continue: %v), net/http: %d %q (%v)", i+1, g.code, g.body, g.sawCont, w.code, w.body, w.sawCont)
				}
				if w.header.Get("Date") == "" {
					continue // refused before any handler: the status and words are what count
				}
				for _, k := range []string{"Content-Type", "Content-Length", "X-Bad", "Set-Cookie"} {
					if g.header.Get(k) != w.header.Get(k) {
						t.Errorf("answer %d: %s %q, net/http: %q", i+1, k, g.header.Get(k), w.header.Get(k))
					}
				}
				if g.header.Get("Date") == "" {
					t.Errorf("answer %d: no Date", i+1)
				}
			}
		})
	}
}

func TestHTTP1PanicClosesOnlyItsConnection(t *testing.T) {
	var logs testenv.Buffer
	_, ours := servers(t, http.HandlerFunc(echo), func(s *http1) { s.log = slog.New(slog.NewTextHandler(&logs, nil)) })
	other := dial(t, ours)
	exchange(t, ours, "GET /?panic HTTP/1.1\r\nHost: x\r\n\r\n", nil, true)
	if !strings.Contains(logs.String(), "asked to") {
		t.Errorf("the panic was not logged: %q", logs.String())
	}
	// The connection opened before the panic still serves.
	if _, err := io.WriteString(other, "GET /after HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(other), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("another connection after the panic: %v %v", resp, err)
	}
}

func TestHTTP1ClosesAnIdleConnection(t *testing.T) {
	_, ours := servers(t, http.HandlerFunc(echo), func(s *http1) { s.idleTimeout = 20 * time.Millisecond })
	// One answer, then nothing: the server hangs up by itself.
	exchange(t, ours, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", []string{"GET"}, true)
}

// held is a handler whose calls wait until released, saying when they began.
type held struct {
	began   chan struct{}
	release chan struct{}
	ctxErr  chan error
}

func newHeld() *held {
	return &held{began: make(chan struct{}, 8), release: make(chan struct{}), ctxErr: make(chan error, 8)}
}

func (h *held) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.began <- struct{}{}
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
	h.ctxErr <- r.Context().Err()
	io.WriteString(w, "done")
}

func TestHTTP1ShutdownFinishesWhatIsInFlight(t *testing.T) {
	h := newHeld()
	s := newHTTP1(h)
	addr, served := serveOn(t, s)

	idle, busy := dial(t, addr), dial(t, addr)
	io.WriteString(busy, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-h.began

	shut := make(chan error, 1)
	go func() { shut <- s.shutdown(context.Background()) }()
	// The idle connection is closed without an answer.
	if b, err := io.ReadAll(idle); err != nil || len(b) > 0 {
		t.Errorf("idle connection: read %q, %v; want a plain close", b, err)
	}
	select {
	case err := <-shut:
		t.Fatalf("shutdown returned with a call in flight: %v", err)
	default:
	}
	close(h.release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the call in flight got no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "done" || !resp.Close {
		t.Errorf("in-flight answer: %q, close %v; want done and Connection: close", b, resp.Close)
	}
	if err := <-h.ctxErr; err != nil {
		t.Errorf("the call's context ended on a graceful shutdown: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("still accepting after shutdown")
	}
}

func TestHTTP1CloseEndsTheCallsInFlight(t *testing.T) {
	h := newHeld()
	s := newHTTP1(h)
	addr, served := serveOn(t, s)
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-h.began
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace at all
	if err := s.shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("shutdown with a call in flight and no grace: %v", err)
	}
	s.close()
	if err := <-h.ctxErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context after close: %v, want canceled", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
}

// TestHTTP1ConcurrentConnections runs many connections, each with several
// requests, under -race.
func TestHTTP1ConcurrentConnections(t *testing.T) {
	_, ours := servers(t, http.HandlerFunc(echo), nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				body := fmt.Sprintf("%d-%d", i, j)
				resp, err := client.Post("http://"+ours+"/p", "text/plain", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Contains(b, []byte(fmt.Sprintf("body=%q", body))) {
					errs <- fmt.Errorf("answer %q to %s", b, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
