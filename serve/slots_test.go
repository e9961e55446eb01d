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
	const maxConns = 8
	h := newSlotHarness(t, maxConns)
	h.call("before")
	h.hold("idle page GETs", 3*maxConns, func(c net.Conn) {
		fmt.Fprintf(c, "GET /style.css HTTP/1.1\r\nHost: %s\r\n\r\n", h.d.addr)
		go func() { // read the answer, then stay connected, idle
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
			}
		}()
	})
	h.hold("silent", 3*maxConns, func(net.Conn) {})
	h.hold("a byte at a time", 3*maxConns, func(c net.Conn) { c.Write([]byte("G")) })
	h.hold("refused, body never ends", 3*maxConns, h.refused)

	if !h.call("on its kept-alive connection, every other slot held") {
		t.Error("the token caller's kept-alive connection was given up for a tokenless one")
	}
	h.tr.CloseIdleConnections()
	if h.call("on a new connection, behind them all in the backlog") {
		t.Error("want a new connection")
	}
	if n := h.u.hits.Load(); n != 3 {
		t.Errorf("upstream hits %d, want the token caller's 3", n)
	}
}

// At the cap LimitNOFILE=200 gives, a new connection of the token caller's
// behind 825 refused callers still sending their bodies: each refused one
// gives up its slot servedGrace after its answer, not the second net/http
// takes to close it.
func TestACallerWithTheTokenFindsASlotBehindAFloodOfRefusals(t *testing.T) {
	h := newSlotHarness(t, 55)
	h.call("before")
	h.tr.CloseIdleConnections()
	h.hold("refused, body never ends", 825, h.refused)
	h.call("on a new connection, behind 825 refused ones in the backlog")
}

type slotHarness struct {
	t  *testing.T
	u  *upstream
	d  *daemon
	tr *http.Transport
}

// newSlotHarness starts a daemon with a token, maxConns connections and
// header, body and idle timeouts of an hour.
func newSlotHarness(t *testing.T, maxConns int) *slotHarness {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{
		Token: "s3cret", MaxConns: maxConns, ReadHeaderTimeout: time.Hour, ReadTimeout: time.Hour, IdleTimeout: time.Hour,
	})
	tr := &http.Transport{MaxConnsPerHost: 1, IdleConnTimeout: time.Hour}
	t.Cleanup(tr.CloseIdleConnections)
	return &slotHarness{t: t, u: u, d: d, tr: tr}
}

// call calls as the token caller and says whether its connection was a
// kept-alive one.
func (h *slotHarness) call(when string) (reused bool) {
	t := h.t
	t.Helper()
	caller := &http.Client{Transport: h.tr, Timeout: 30 * time.Second} // a safety net: without the slots, an hour
	req, _ := http.NewRequest("GET", "http://"+h.d.addr+"/call/u", nil)
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
	took := time.Since(start)
	t.Logf("the caller with the token, %s: answered after %s", when, took.Round(time.Millisecond))
	if took > slotBound {
		t.Errorf("the caller with the token, %s: answered after %s, want a slot within %s", when, took.Round(time.Millisecond), slotBound)
	}
	return reused
}

// slotBound is how soon a caller with the token must find a slot: issue
// 36 asks a second, and this is twice that for a machine with both cores
// busy, where it took 0.45-0.83 s (before 76b6da0, 2.9 s and 8.3 s).
const slotBound = 2 * time.Second

// hold opens n connections to the daemon, each doing do.
func (h *slotHarness) hold(kind string, n int, do func(c net.Conn)) {
	for range n {
		c, err := net.Dial("tcp", h.d.addr)
		if err != nil {
			h.t.Fatalf("%s: %v", kind, err)
		}
		h.t.Cleanup(func() { c.Close() })
		do(c)
	}
}

// refused sends a call without the token whose body never ends.
func (h *slotHarness) refused(c net.Conn) {
	fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\nx", h.d.addr)
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
