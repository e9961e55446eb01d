package serve_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// Every slot held by callers without the token, in each way a slot can be
// held (a kept-alive page GET gone idle, a connection that sends nothing,
// one that sends its header a byte at a time, one refused and sending a
// body that never ends): a caller with the token still finds one. The
// daemon's header and idle timeouts are an hour, so only giving up an
// unproven slot can make room; the token caller's own kept-alive
// connection, made before, is never the one given up.
func TestACallerWithTheTokenFindsASlotAmongTokenlessOnes(t *testing.T) {
	u := newUpstream(t, "u")
	const maxConns = 8
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{
		Token: "s3cret", MaxConns: maxConns, ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, IdleTimeout: time.Hour,
	})
	tr := &http.Transport{MaxConnsPerHost: 1, IdleConnTimeout: time.Hour}
	defer tr.CloseIdleConnections()
	caller := &http.Client{Transport: tr, Timeout: 30 * time.Second} // a safety net: without the slots, an hour
	call := func(when string) (reused bool) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+d.addr+"/call/u", nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
		start := time.Now()
		resp, err := caller.Do(req)
		if err != nil {
			t.Fatalf("the caller with the token, %s: no answer after %s: %v", when, time.Since(start), err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"from":"u"`) {
			t.Fatalf("the caller with the token, %s: %d %q", when, resp.StatusCode, body)
		}
		t.Logf("the caller with the token, %s: answered after %s", when, time.Since(start).Round(time.Millisecond))
		return reused
	}
	call("before")

	hold := func(kind string, do func(c net.Conn)) {
		for range 3 * maxConns { // more than there are slots: the rest wait in the backlog
			c, err := net.Dial("tcp", d.addr)
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			t.Cleanup(func() { c.Close() })
			do(c)
		}
	}
	hold("idle page GETs", func(c net.Conn) {
		fmt.Fprintf(c, "GET /style.css HTTP/1.1\r\nHost: %s\r\n\r\n", d.addr)
		go func() { // read the answer, then stay connected, idle
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
			}
		}()
	})
	hold("silent", func(net.Conn) {})
	hold("a byte at a time", func(c net.Conn) { c.Write([]byte("G")) })
	hold("refused, body never ends", func(c net.Conn) {
		fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nx", d.addr)
	})

	if !call("on its kept-alive connection, every other slot held") {
		t.Error("the token caller's kept-alive connection was given up for a tokenless one")
	}
	tr.CloseIdleConnections()
	if call("on a new connection, behind them all in the backlog") {
		t.Error("want a new connection")
	}
	if n := u.hits.Load(); n != 3 {
		t.Errorf("upstream hits %d, want the token caller's 3", n)
	}
}

// A connection that has not shown the token is kept alive for
// DefaultUnprovenIdle between requests; one that has, for IdleTimeout.
func TestATokenlessConnectionIsKeptAliveBriefly(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{Token: "s3cret", IdleTimeout: time.Hour})
	proven := dialDaemon(t, d)
	fmt.Fprintf(proven, "GET /api/circuits HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer s3cret\r\n\r\n", d.addr)
	pr := bufio.NewReader(proven)
	resp, err := http.ReadResponse(pr, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the token caller: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)

	page := dialDaemon(t, d)
	fmt.Fprintf(page, "GET /style.css HTTP/1.1\r\nHost: %s\r\n\r\n", d.addr)
	start := time.Now()
	page.SetReadDeadline(time.Now().Add(2 * time.Minute)) // a safety net: IdleTimeout is an hour
	if _, err := io.ReadAll(page); err != nil {
		t.Fatalf("the page's connection after %s: %v; want it closed by the daemon", time.Since(start), err)
	}
	if took := time.Since(start); took < serve.DefaultUnprovenIdle {
		t.Errorf("the page's connection was closed after %s, before %s idle", took, serve.DefaultUnprovenIdle)
	}
	// The token caller's connection, idle as long, is still served.
	fmt.Fprintf(proven, "GET /api/circuits HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer s3cret\r\n\r\n", d.addr)
	if resp, err := http.ReadResponse(pr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the token caller's kept-alive connection after %s idle: %v %v", time.Since(start), resp, err)
	}
}
