package httpcall_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// rawServer serves each connection with handle on a loopback listener,
// counting the connections it accepted. handle reads requests itself, so a
// test can make an upstream misbehave in ways net/http's server will not.
type rawServer struct {
	addr     string
	accepted func() int64
}

func newRawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	addr, accepted := testenv.ServeConns(t, func(c net.Conn, _ <-chan struct{}) { handle(c, bufio.NewReader(c)) })
	return &rawServer{addr: addr, accepted: accepted}
}

// answerEach answers every request on the connection with reply's bytes,
// until reply returns "" or the client goes.
func answerEach(reply func(n int, r *http.Request) string) func(net.Conn, *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for n := 0; ; n++ {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			out := reply(n, r)
			if out == "" {
				return
			}
			if _, err := io.WriteString(c, out); err != nil {
				return
			}
		}
	}
}

const okReply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func direct(t *testing.T, mods ...func(*http.Transport)) *httpcall.DirectTransport {
	t.Helper()
	base := &http.Transport{}
	for _, m := range mods {
		m(base)
	}
	rt, ok := httpcall.NewDirectTransport(base).(*httpcall.DirectTransport)
	if !ok {
		t.Fatal("NewDirectTransport returned its base")
	}
	t.Cleanup(rt.CloseIdleConnections)
	return rt
}

func get(t *testing.T, rt http.RoundTripper, url string, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return rt.RoundTrip(req)
}

// mustRead gets url and reads its body to the end.
func mustRead(t *testing.T, rt http.RoundTripper, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp, err := get(t, rt, url, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestDirectTransportReusesItsConnection(t *testing.T) {
	var dialed atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "fusebox" || r.URL.RawQuery != "a=1" || r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("request: %v %q %v", r.URL, r.Header.Get("User-Agent"), r.Header)
		}
		io.WriteString(w, "hello")
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	rt := direct(t)
	for range 20 {
		if resp, body := mustRead(t, rt, up.URL+"?a=1", "User-Agent", "fusebox"); resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	}
	if n := dialed.Load(); n != 1 {
		t.Errorf("20 requests one after another dialed %d times, want 1", n)
	}
}

// A server that closes a connection it kept alive (its idle timeout) while
// the request went out: the request is sent again on a new connection.
func TestDirectTransportRetriesAConnectionClosedWhileIdle(t *testing.T) {
	s := newRawServer(t, answerEach(func(n int, _ *http.Request) string {
		if n == 1 {
			return "" // the second request on a connection: close it unanswered
		}
		return okReply
	}))
	rt := direct(t)
	for i := range 3 {
		if resp, body := mustRead(t, rt, "http://"+s.addr+"/"); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if n := s.accepted(); n != 3 {
		t.Errorf("%d connections, want 3 (each second request on one is sent again on a new one)", n)
	}
}

// The retry is made once, and only on a connection that was reused: a new
// connection's failure is the request's.
func TestDirectTransportRetriesOnceAndNotAFreshConnection(t *testing.T) {
	s := newRawServer(t, answerEach(func(int, *http.Request) string { return "" }))
	rt := direct(t)
	if _, err := get(t, rt, "http://"+s.addr+"/"); err == nil || !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a server that closes every connection unanswered: %v, want an EOF", err)
	}
	if n := s.accepted(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// Requests that might not be safe to send twice are not the DirectTransport's.
func TestDirectTransportLeavesToItsBase(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	rt := direct(t)
	kind := func(req *http.Request) string {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return fmt.Sprintf("%T", resp.Body)
	}
	mine := "*httpcall.directBody"
	req := func(method string, body io.Reader, hdr ...string) *http.Request {
		r, err := http.NewRequest(method, up.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		return r
	}
	noGetBody := req(http.MethodPut, io.NopCloser(strings.NewReader("x")))
	noGetBody.GetBody = nil
	tests := []struct {
		name string
		req  *http.Request
		want bool
	}{
		{"GET", req(http.MethodGet, nil), true},
		{"PUT with a body it can send again", req(http.MethodPut, strings.NewReader("x")), true},
		{"POST with an Idempotency-Key", req(http.MethodPost, strings.NewReader("x"), "Idempotency-Key", "k"), true},
		{"POST", req(http.MethodPost, strings.NewReader("x")), false},
		{"a body it cannot send again", noGetBody, false},
		{"a body over 64 KiB", req(http.MethodPut, strings.NewReader(strings.Repeat("x", 64<<10+1))), false},
		{"Expect: 100-continue", req(http.MethodPut, strings.NewReader("x"), "Expect", "100-continue"), false},
	}
	for _, tt := range tests {
		if got := kind(tt.req); (got == mine) != tt.want || !tt.want && !strings.HasPrefix(got, "*http.") {
			t.Errorf("%s: the body is a %s; want the DirectTransport's: %v", tt.name, got, tt.want)
		}
	}
	// The base refuses it, in its own words.
	if got := kind(req(http.MethodGet, nil, "X-Bad", "a\x01b")); got != `net/http: invalid header field value for "X-Bad"` {
		t.Errorf("a header value the base refuses: %s", got)
	}
	if _, ok := httpcall.NewDirectTransport(&http.Transport{DisableKeepAlives: true}).(*http.Transport); !ok {
		t.Error("a base without keep-alives is returned as it is")
	}
}

// A body read in part, or closed unread, costs its connection: what is left
// of it would be read as the next answer.
func TestDirectTransportDropsAConnectionWithABodyNotReadToItsEnd(t *testing.T) {
	s := newRawServer(t, answerEach(func(int, *http.Request) string {
		return "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"
	}))
	rt := direct(t)
	resp, err := get(t, rt, "http://"+s.addr+"/")
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	io.ReadFull(resp.Body, b[:])
	resp.Body.Close()
	if _, err := resp.Body.Read(b[:]); err == nil {
		t.Error("a read after Close succeeded")
	}
	if _, body := mustRead(t, rt, "http://"+s.addr+"/"); body != "0123456789" {
		t.Errorf("the next body: %q", body)
	}
	mustRead(t, rt, "http://"+s.addr+"/")
	if n := s.accepted(); n != 2 {
		t.Errorf("%d connections, want 2 (one dropped with its body half read, one reused)", n)
	}
}

func TestDirectTransportMisbehavingUpstreams(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		body    string // what the body reads as
		wantErr error  // of reading the body
		conns   int64  // after two requests
	}{
		{"short body then close", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234", "01234", io.ErrUnexpectedEOF, 2},
		{"close after the header", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "", io.ErrUnexpectedEOF, 2},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", "abcde", nil, 1},
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "ok", nil, 2},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", nil, 2},
		{"no length: the body ends with the connection", "HTTP/1.1 200 OK\r\n\r\nuntil the end", "until the end", nil, 2},
		{"1xx before the answer", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + okReply, "ok", nil, 1},
		{"no body", "HTTP/1.1 204 No Content\r\n\r\n", "", nil, 1},
		{"bytes past the answer", okReply + "garbage", "ok", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A reply that should end the connection comes from a server
			// that closes it after one; the others are kept open, and a
			// client that reused one it should not would be found out.
			handle := answerEach(func(n int, _ *http.Request) string {
				if n > 0 && tt.conns == 2 {
					t.Error("a second request on a connection that should have been dropped")
				}
				return tt.reply
			})
			if tt.conns == 2 && !strings.Contains(tt.name, "past") {
				handle = func(c net.Conn, br *bufio.Reader) { // the connection ends with the reply
					if r, err := http.ReadRequest(br); err == nil {
						io.Copy(io.Discard, r.Body)
						io.WriteString(c, tt.reply)
					}
				}
			}
			s := newRawServer(t, handle)
			rt := direct(t)
			for i := range 2 {
				resp, err := get(t, rt, "http://"+s.addr+"/")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != tt.body || !errors.Is(err, tt.wantErr) && err != tt.wantErr {
					t.Errorf("request %d: body %q, %v; want %q, %v", i, b, err, tt.body, tt.wantErr)
				}
			}
			if n := s.accepted(); n != tt.conns {
				t.Errorf("%d connections for two requests, want %d", n, tt.conns)
			}
		})
	}
}

// A request saying Connection: close closes its connection after the answer.
func TestDirectTransportRequestConnectionClose(t *testing.T) {
	s := newRawServer(t, answerEach(func(int, *http.Request) string { return okReply }))
	rt := direct(t)
	mustRead(t, rt, "http://"+s.addr+"/", "Connection", "close")
	mustRead(t, rt, "http://"+s.addr+"/")
	if n := s.accepted(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// The request's context bounds the wait for the answer and the reading of
// its body, and the connection goes with it.
func TestDirectTransportContext(t *testing.T) {
	gone := make(chan struct{}, 2)
	hang := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if r, err := http.ReadRequest(br); err == nil {
			if r.URL.Path == "/body" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01")
			}
		}
		io.Copy(io.Discard, br) // until the client closes
		gone <- struct{}{}
	})
	rt := direct(t)
	for _, path := range []string{"/header", "/body"} {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hang.addr+path, nil)
		errs := make(chan error, 1)
		go func() {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
		time.AfterFunc(20*time.Millisecond, cancel) // the request is waiting, or soon will be
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", path, err)
		}
		<-gone // the connection was closed
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hang.addr+"/header", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a deadline: %v, want context.DeadlineExceeded", err)
	}
	<-gone
}

func TestDirectTransportDecodesTheGzipItAskedFor(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, "inflated")
	zw.Close()
	s := newRawServer(t, answerEach(func(_ int, r *http.Request) string {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain"
		}
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", zipped.Len(), zipped.String())
	}))
	rt := direct(t)
	resp, body := mustRead(t, rt, "http://"+s.addr+"/")
	if body != "inflated" || !resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != -1 {
		t.Errorf("asked by the transport: %q, uncompressed %v, header %v, length %d", body, resp.Uncompressed, resp.Header, resp.ContentLength)
	}
	// Asked by the caller: the caller's to decode, as with http.Transport.
	resp, body = mustRead(t, rt, "http://"+s.addr+"/", "Accept-Encoding", "gzip")
	if body != zipped.String() || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("asked by the caller: decoded %v, header %v", body != zipped.String(), resp.Header)
	}
	if _, body := mustRead(t, rt, "http://"+s.addr+"/", "Range", "bytes=0-"); body != "plain" {
		t.Errorf("with a Range: %q, want it not asked for gzip", body)
	}
	if n := s.accepted(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func TestDirectTransportBoundsTheHeader(t *testing.T) {
	s := newRawServer(t, answerEach(func(int, *http.Request) string {
		return "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("x", 4<<10) + "\r\nContent-Length: 2\r\n\r\nok"
	}))
	rt := direct(t, func(tr *http.Transport) { tr.MaxResponseHeaderBytes = 1 << 10 })
	if _, err := get(t, rt, "http://"+s.addr+"/"); err == nil || !strings.Contains(err.Error(), "exceeded") {
		t.Errorf("a 4 KiB header past a 1 KiB bound: %v", err)
	}
}

// Idle connections are closed after IdleConnTimeout.
func TestDirectTransportClosesIdleConnections(t *testing.T) {
	closed := make(chan struct{})
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		answerEach(func(int, *http.Request) string { return okReply })(c, br)
		close(closed)
	})
	rt := direct(t, func(tr *http.Transport) { tr.IdleConnTimeout = 10 * time.Millisecond })
	mustRead(t, rt, "http://"+s.addr+"/")
	<-closed
}

// Many callers at once share the pool; run with -race.
func TestDirectTransportConcurrentCallers(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.RawQuery)
	}))
	defer up.Close()
	rt := direct(t, func(tr *http.Transport) { tr.MaxIdleConnsPerHost = 8 })
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				q := fmt.Sprintf("%d-%d", w, i)
				req, _ := http.NewRequest(http.MethodGet, up.URL+"?"+q, nil)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != q {
					t.Errorf("%q, want %q", b, q)
				}
			}
		})
	}
	wg.Wait()
}
