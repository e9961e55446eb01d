package serve_test

// The holes an outside attack found in the daemon's own HTTP code, each
// held closed here against the daemon on net/http: raw-socket callers and
// misbehaving upstreams on loopback.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/serve"
)

// An upstream that writes a second, unrequested answer on a kept-alive
// connection while it is idle must not have it delivered as the answer to
// the next call, to another endpoint on the same host and port: the
// transport drops the connection ("Unsolicited response received on idle
// HTTP channel") and the next call dials anew.
//
// What http.Transport does not promise: an unsolicited answer that is on the
// connection at the very moment the next request takes it from the idle
// pool (written together with the previous answer, say) may be read as that
// request's answer; under the race detector that happens in most runs.
// Closing that window takes HTTP framing the transport does not expose, so
// it is left to the library (docs/reliability.md §13).
func TestAnUnsolicitedUpstreamAnswerIsNobodysAnswer(t *testing.T) {
	var logged testenv.Buffer
	log.SetOutput(&logged) // where http.Transport says what it dropped
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	answered := make(chan struct{})
	addr, accepted := testenv.ServeConns(t, func(c net.Conn, done <-chan struct{}) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			own := "answer to " + req.URL.Path
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(own), own)
			if req.URL.Path != "/a" {
				continue
			}
			select { // once the caller has its answer: the connection is idle
			case <-answered:
			case <-done:
				return
			}
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED")
		}
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("a", "http://"+addr+"/a"),
		endpoint("b", "http://"+addr+"/b"),
	}}, serve.Options{})
	for i := range 5 {
		if r := d.get(t, "/call/a"); r.code != 200 || r.body != "answer to /a" {
			t.Fatalf("call %d of a: %d %q", i, r.code, r.body)
		}
		answered <- struct{}{}
		testenv.WaitFor(t, "the transport to drop the connection with the unsolicited answer", func() bool {
			return strings.Count(logged.String(), "Unsolicited response received on idle HTTP channel") > i
		})
		if r := d.get(t, "/call/b"); r.code != 200 || r.body != "answer to /b" {
			t.Fatalf("call %d of b: %d %q; want its own answer (an unsolicited one delivered to the next call is a response desync)", i, r.code, r.body)
		}
	}
	if n := accepted(); n < 6 {
		t.Errorf("%d upstream connections for 5 dropped ones: a connection with an unsolicited answer was used again", n)
	}
}

// A request the guard refuses gets its answer before any of its body is
// sent, and its connection is closed rather than read on: a caller without
// the token holds no connection with a slow body. Below 256 KiB net/http
// would read on to drain the body until the read deadline (here an hour),
// above it it gives up at once: both are closed at most half a second
// after the answer is written.
func TestARefusedRequestIsAnsweredAndClosedWithoutItsBody(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) { e.PassBody = true })}},
		serve.Options{Token: "s3cret", ReadTimeout: time.Hour})
	for _, size := range []int{100000, 300000, 1000000} {
		c := dialDaemon(t, d)
		fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\nthe first bytes of a body that never ends", d.addr, size)
		if err := refusedAndClosed(c, "HTTP/1.1 401 "); err != nil {
			t.Errorf("a refused POST with Content-Length %d: %v", size, err)
		}
		// With the token, of a name the config does not have: refused too,
		// before the body is read.
		c = dialDaemon(t, d)
		fmt.Fprintf(c, "POST /call/nosuch HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer s3cret\r\nContent-Length: %d\r\n\r\nthe first bytes", d.addr, size)
		if err := refusedAndClosed(c, "HTTP/1.1 404 "); err != nil {
			t.Errorf("a POST of no such endpoint with Content-Length %d: %v", size, err)
		}
	}
	if u.hits.Load() != 0 {
		t.Error("a refused request reached the upstream")
	}
}

// A caller refused while its small body is still on its way (a request
// over the body limit, as n8n may send one) sends the rest after its
// answer and still reads a plain end of the connection, not a reset: the
// daemon reads a refused body on for a moment, so that the reset of a
// close with the body unread does not take the answer with it (Go's
// transport then reports its failed write instead of the 413).
func TestARefusedCallersLateBodyDoesNotResetItsAnswer(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{MaxRequestBody: 1024})
	c := dialDaemon(t, d)
	body := strings.Repeat("x", 4096)
	fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", d.addr, len(body), body[:100])
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net: the daemon's close ends the reads
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %d, want 413", resp.StatusCode)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	// In parts, as a transport's buffered writer sends it: on a closed
	// connection the first part draws the reset, which the next one meets.
	for i := 100; i < len(body); i += 1000 {
		if _, err := io.WriteString(c, body[i:min(i+1000, len(body))]); err != nil {
			t.Fatalf("sending the rest of the body after the answer, from byte %d: %v (the daemon closed the connection with the body unread)", i, err)
		}
	}
	rest, err := io.ReadAll(br)
	switch {
	case isReset(err):
		t.Fatalf("the connection was reset after the answer: a caller still sending its body can lose its answer")
	case err != nil:
		t.Fatalf("reading the end of the connection: %v (read %q)", err, rest)
	case len(rest) > 0:
		t.Fatalf("more after the answer: %q", rest)
	}
	if u.hits.Load() != 0 {
		t.Error("a refused request reached the upstream")
	}
}

// refusedAndClosed reads c's answer, which must start with status, and then
// the end of the connection: an EOF, or a reset (the daemon closed it with
// the caller's unread body on it). It says which when not.
func refusedAndClosed(c net.Conn, status string) error {
	c.SetReadDeadline(time.Now().Add(time.Minute)) // a safety net: the daemon's close ends the read
	b, err := io.ReadAll(c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		if len(b) == 0 {
			return fmt.Errorf("no answer and the connection still open a minute on")
		}
		return fmt.Errorf("the answer came (%q), but the connection was still open a minute on: the daemon waits for the body", firstLine(b))
	}
	if err != nil && !isReset(err) {
		return fmt.Errorf("reading the answer: %v (read %q)", err, b)
	}
	if !bytes.HasPrefix(b, []byte(status)) {
		return fmt.Errorf("answer %q, want %q", firstLine(b), status)
	}
	return nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return string(line)
}

// Callers that send a body slowly, or never, are cut off after ReadTimeout:
// with every connection the daemon allows held by them, a caller with the
// token is answered once they are.
func TestSlowBodiesDoNotStarveOtherCallers(t *testing.T) {
	u := newUpstream(t, "u")
	const maxConns = 8
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) {
		e.PassBody = true
		e.Method = "POST"
	})}}, serve.Options{Token: "s3cret", MaxConns: maxConns, ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond})

	var slow []net.Conn
	for range 3 * maxConns { // more than the daemon takes: the rest wait in the backlog
		c := dialDaemon(t, d)
		fmt.Fprintf(c, "POST /call/u HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer s3cret\r\nContent-Length: 1000\r\n\r\nx", d.addr)
		slow = append(slow, c)
	}
	r := d.do(t, "POST", "/call/u", func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer s3cret")
		r.Body = io.NopCloser(strings.NewReader("hello"))
	})
	if r.code != 200 {
		t.Fatalf("a caller behind slow bodies: %d %q", r.code, r.body)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		b, err := io.ReadAll(c)
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			t.Fatalf("slow body %d: its connection is still open a minute on (read %q)", i, b)
		}
		if len(b) > 0 && !bytes.HasPrefix(b, []byte("HTTP/1.1 408 ")) {
			t.Errorf("slow body %d: answer %q, want a 408 or none", i, b)
		}
	}
	if n := u.hits.Load(); n != 1 {
		t.Errorf("upstream hits %d; want 1, the caller's (a slow body must not be sent on)", n)
	}
}

// Callers that ask for a large answer and never read it hold one copy of it
// between them, not one each; the answer is written under a write deadline,
// so their connections are closed after it and the copy freed.
func TestCallersThatNeverReadShareOneAnswer(t *testing.T) {
	const callers, size = 40, 9 << 20
	body := bytes.Repeat([]byte("x"), size)
	release := make(chan struct{})
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write(body)
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("big", up, func(e *httpcall.Endpoint) {
		e.MaxBody = 2 * size
		slowMachine(e)
	})}}, serve.Options{WriteTimeout: time.Hour})

	var conns []net.Conn
	for range callers {
		c := dialDaemon(t, d)
		c.(*net.TCPConn).SetReadBuffer(4 << 10) // as little as the kernel will buffer for a caller that never reads
		fmt.Fprintf(c, "GET /call/big HTTP/1.1\r\nHost: %s\r\n\r\n", d.addr)
		conns = append(conns, c)
	}
	testenv.WaitFor(t, "every caller to join the one call", func() bool { return sharing() == callers })
	before := heapInUse()
	close(release)
	testenv.WaitFor(t, "every caller's answer to be under way", func() bool { return d.Answered() == callers })
	grew := int64(heapInUse()) - int64(before)
	if grew > 4*size {
		t.Errorf("the heap grew by %d MiB for %d callers of one %d MiB answer that none reads; want about one copy", grew>>20, callers, size>>20)
	}
	t.Logf("heap growth with %d callers of one %d MiB answer, none reading: %.1f MiB", callers, size>>20, float64(grew)/(1<<20))
	for i, c := range conns { // each was the answer, not a failure
		c.SetReadDeadline(time.Now().Add(5 * time.Minute))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != size {
			t.Fatalf("caller %d: %v %v; want the 200 of %d bytes", i, resp, err, size)
		}
		c.Close()
	}
}

// A caller that reads an answer too slowly has its connection closed at the
// end of the write deadline.
func TestAnAnswerIsWrittenUnderAWriteDeadline(t *testing.T) {
	const size = 32 << 20
	body := bytes.Repeat([]byte("x"), size)
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("big", up, func(e *httpcall.Endpoint) {
		e.MaxBody = 2 * size
		slowMachine(e)
	})}}, serve.Options{WriteTimeout: 100 * time.Millisecond})
	c := dialDaemon(t, d)
	fmt.Fprintf(c, "GET /call/big HTTP/1.1\r\nHost: %s\r\n\r\n", d.addr)
	c.SetReadDeadline(time.Now().Add(5 * time.Minute)) // a safety net: the daemon's close ends the read
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer's header: %v", err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		t.Fatalf("the call failed (%d %s), before the answer whose write deadline is tested", resp.StatusCode, b)
	}
	// At most 64 KiB each 10 ms, the whole answer takes five seconds or
	// more to read: the deadline ends it first, however slow the machine.
	buf := make([]byte, 64<<10)
	var n int
	for err == nil {
		var m int
		m, err = resp.Body.Read(buf)
		n += m
		time.Sleep(10 * time.Millisecond)
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the connection is still open five minutes on (read %d bytes of the body)", n)
	}
	if n >= size || err != io.ErrUnexpectedEOF {
		t.Fatalf("read %d bytes of %d, then %v: want the connection closed short of the whole answer", n, size, err)
	}
	t.Logf("read %d bytes of the body before the close", n)
}

// slowMachine gives an endpoint's calls the time a machine busy with other
// work (or the race detector) takes to move tens of megabytes: the tests that
// use it are about what the daemon does with an answer, not how fast it gets
// one.
func slowMachine(e *httpcall.Endpoint) {
	e.Policy.Retry.Timeout = 5 * time.Minute
	e.Policy.Retry.Deadline = 5 * time.Minute
}

// Requests pipelined on one connection are each answered, in order, the
// first as soon as it is served.
func TestPipelinedRequestsAreAnsweredInOrder(t *testing.T) {
	a, b := newUpstream(t, "a"), newUpstream(t, "b")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("a", a.URL), endpoint("b", b.URL)}}, serve.Options{})
	c := dialDaemon(t, d)
	fmt.Fprintf(c, "GET /call/a HTTP/1.1\r\nHost: %[1]s\r\n\r\nGET /call/b HTTP/1.1\r\nHost: %[1]s\r\n\r\n", d.addr)
	br := bufio.NewReader(c)
	for _, want := range []string{"a", "b"} {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer for %s: %v", want, err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(got), `"from":"`+want+`"`) {
			t.Fatalf("answer for %s: %d %q", want, resp.StatusCode, got)
		}
	}
}

// A call whose upstream request is unsafe (here a POST with the config's
// Authorization) needs an unsafe request of its caller: a page on any site
// can have a browser send a GET (an <img src>), which, with the browser's
// headers, is refused as every call from another site is, and without them
// answered 405; a cross-site POST is refused.
func TestACallThatSendsAPostUpstreamNeedsAPost(t *testing.T) {
	g := newGate(t)
	g.open()
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{endpoint("hook", g.URL, func(e *httpcall.Endpoint) {
			e.Method = "POST"
			e.Headers = map[string]string{"Authorization": "Bearer upstream-secret"}
		})},
		Chains: []*httpcall.Chain{{Name: "via", Endpoints: []string{"hook"}}},
	}, serve.Options{})
	img := func(r *http.Request) {
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Sec-Fetch-Dest", "image")
	}
	for _, name := range []string{"hook", "via"} {
		if r := d.get(t, "/call/"+name, img); r.code != http.StatusForbidden {
			t.Errorf("a cross-site <img> GET of %s: %d %s; want 403, as every call from another site", name, r.code, r.body)
		}
		if r := d.get(t, "/call/"+name); r.code != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
			t.Errorf("a plain GET of %s: %d (Allow %q); want 405 with Allow: POST", name, r.code, r.header.Get("Allow"))
		}
		if r := d.do(t, "POST", "/call/"+name, func(r *http.Request) {
			r.Header.Set("Sec-Fetch-Site", "cross-site")
			r.Header.Set("Origin", "http://evil.example")
		}); r.code != http.StatusForbidden {
			t.Errorf("a cross-site POST of %s: %d; want 403", name, r.code)
		}
	}
	if n := g.hits.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests from refused calls", n)
	}
	if r := d.do(t, "POST", "/call/hook"); r.code != 200 || !strings.HasPrefix(r.body, "POST /") {
		t.Fatalf("a POST from a non-browser caller: %d %q", r.code, r.body)
	}
}

// An upstream's CORS grants (Access-Control-Allow-Origin: *, as many public
// APIs send) are not passed on, and a call from a page of another site or
// origin is refused before it is made, GET or not: no page but the
// daemon's own can read an answer made with the config's credentials, or
// make calls with them.
func TestACallFromAnotherSiteIsRefusedAndNoCORSGrantIsRelayed(t *testing.T) {
	var hits atomic.Int64
	up := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("Access-Control-Expose-Headers", "X-Secret")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"temp":21.5}`))
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", up, func(e *httpcall.Endpoint) {
		e.Headers = map[string]string{"Authorization": "Bearer upstream-secret"}
	})}}, serve.Options{})
	browser := func(site, origin string) func(*http.Request) {
		return func(r *http.Request) {
			if site != "" {
				r.Header.Set("Sec-Fetch-Site", site)
			}
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
		}
	}
	for _, c := range []struct {
		name, site, origin string
	}{
		{"a cross-site fetch", "cross-site", "http://evil.example"},
		{"a page of another port on the same host (same-site)", "same-site", "http://127.0.0.1:1"},
		{"an old browser's cross-origin fetch (Origin alone)", "", "http://evil.example"},
		{"a sandboxed page (Origin: null)", "", "null"},
	} {
		for _, method := range []string{"GET", "POST"} {
			r := d.do(t, method, "/call/u", browser(c.site, c.origin))
			if r.code != http.StatusForbidden || !strings.Contains(r.body, "another") && !strings.Contains(r.body, "cross-origin") {
				t.Errorf("%s, %s: %d %q; want 403 saying it comes from another site or origin", c.name, method, r.code, r.body)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("calls from other sites reached the upstream %d times", n)
	}
	for _, c := range []struct {
		name, site, origin string
	}{
		{"a non-browser caller", "", ""},
		{"the daemon's own page", "same-origin", "http://" + d.addr},
		{"an address typed in the browser", "none", ""},
	} {
		r := d.get(t, "/call/u", browser(c.site, c.origin))
		if r.code != 200 || r.body != `{"temp":21.5}` {
			t.Errorf("%s: %d %q; want the answer", c.name, r.code, r.body)
		}
		for k := range r.header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: the upstream's %s: %s was passed on", c.name, k, r.header.Get(k))
			}
		}
	}
}

// A subpath or query that a server behind the daemon could read as leaving
// the endpoint's base, or as overriding a parameter the config sets, is
// refused before anything is sent: a query name with a control character
// at the guard (400), a name a server reads as the config's (PHP cuts at a
// NUL, skips spaces, reads "." and " " as "_") at the call (403).
func TestSubpathAndQuerySpellingsAreRefused(t *testing.T) {
	g := newGate(t)
	g.open()
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("ha", g.URL+"/api?appid=mine", func(e *httpcall.Endpoint) { e.AllowSubpath, e.PassQuery = true, true }),
		endpoint("owm", g.URL+"/data?app_id=mine", func(e *httpcall.Endpoint) { e.PassQuery = true }),
	}}, serve.Options{})
	for _, c := range []struct {
		path string
		code int
	}{
		{"/call/ha/..;/x", http.StatusForbidden}, {"/call/ha/a/..;/..;/x", http.StatusForbidden},
		{"/call/ha/x;y", http.StatusForbidden}, {"/call/ha/.../x", http.StatusForbidden},
		{"/call/ha/states?APPID=theirs", http.StatusForbidden}, {"/call/ha/states?appid[]=theirs", http.StatusForbidden},
		{"/call/ha/states?appid%5B%5D=theirs", http.StatusForbidden}, {"/call/ha/states?AppId[0]=theirs", http.StatusForbidden},
		{"/call/ha/states?appid%00=evil", http.StatusBadRequest}, {"/call/ha?appid%00x=evil", http.StatusBadRequest},
		{"/call/ha?%09appid=evil", http.StatusBadRequest}, {"/call/ha?appid%0d%0a=evil", http.StatusBadRequest},
		{"/call/ha?%20appid=evil", http.StatusForbidden}, {"/call/ha?appid%20=evil", http.StatusForbidden},
		{"/call/ha?++appid=evil", http.StatusForbidden},
		{"/call/owm?app.id=evil", http.StatusForbidden}, {"/call/owm?app%20id=evil", http.StatusForbidden},
		{"/call/owm?app+id=evil", http.StatusForbidden}, {"/call/owm?%20App.Id[]=evil", http.StatusForbidden},
		{"/call/owm?app[id=evil", http.StatusForbidden},
	} {
		r := d.get(t, c.path)
		if r.code != c.code {
			t.Errorf("%s: %d %q; want %d", c.path, r.code, r.body, c.code)
		}
		if c.code == http.StatusBadRequest && !strings.Contains(r.body, "holds a control character") {
			t.Errorf("%s: %q; want it to say the name holds a control character", c.path, r.body)
		}
	}
	if n := g.hits.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests from refused calls", n)
	}
	if r := d.get(t, "/call/ha/states?since=1h"); r.code != 200 || r.body != "GET /api/states ?appid=mine&since=1h body=" {
		t.Fatalf("an allowed subpath and query: %d %q", r.code, r.body)
	}
	if r := d.get(t, "/call/ha?note=a%00b&app.id=1"); r.code != 200 {
		t.Fatalf("a control character in a value, and a name of its own with a dot: %d %q", r.code, r.body)
	}
}

// A caller's query cannot crowd out the config's: behind the daemon, a
// PHP upstream reads the first 1000 variables of a query (max_input_vars)
// and drops the rest. 1,000 parameters of the caller's are refused at the
// guard (400, saying the bound) before anything is sent, and so are their
// neighbours (a name repeated, a huge value, names that escape to three
// times their size); within the bound, the config's appid comes first and
// PHP reads it.
func TestACallersQueryNeverCrowdsOutTheConfigs(t *testing.T) {
	var hits atomic.Int64
	php := newRawUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		vars := strings.Split(r.URL.RawQuery, "&")
		fmt.Fprintf(w, "vars=%d appid=%v", len(vars), slices.Contains(vars[:min(len(vars), 1000)], "appid=mine"))
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("weather", php+"/weather.php?appid=mine", func(e *httpcall.Endpoint) { e.PassQuery = true }),
	}}, serve.Options{})
	query := func(n int, name func(int) string, value string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(name(i) + "=" + value)
		}
		return b.String()
	}
	distinct := func(i int) string { return fmt.Sprintf("a%04d", i) }
	for _, c := range []struct{ name, query string }{
		{"1,000 names sorted before the config's", query(1000, distinct, "1")},
		{"101 names", query(httpcall.MaxQueryParams+1, distinct, "1")},
		{"one name 1,000 times", query(1000, func(int) string { return "id" }, "1")},
		{"a value of 5 KB", "note=" + strings.Repeat("x", 5000)},
		{"a value escaped to three times its size", "path=" + strings.Repeat("/", 1500)},
	} {
		r := d.get(t, "/call/weather?"+c.query)
		if r.code != http.StatusBadRequest || !strings.Contains(r.body, "query too large") {
			t.Errorf("%s: %d %.200q; want 400 saying the query is too large", c.name, r.code, r.body)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the upstream got %d requests from refused queries", n)
	}
	r := d.get(t, "/call/weather?"+query(httpcall.MaxQueryParams, distinct, "1"))
	if r.code != 200 || r.body != fmt.Sprintf("vars=%d appid=true", httpcall.MaxQueryParams+1) {
		t.Errorf("100 parameters of the caller's: %d %q; want the config's appid read by PHP", r.code, r.body)
	}
}

// newRawUpstream serves h on loopback and returns its URL.
func newRawUpstream(t testing.TB, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

func dialDaemon(t *testing.T, d *daemon) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// heapInUse is the heap's size in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
