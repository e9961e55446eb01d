package httpcall

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/internal/httpsyntax"
)

// DirectTransport makes plain http:// round trips on the caller's goroutine:
// the request written with net/http's own (*http.Request).Write, the answer
// read with http.ReadResponse, over a pool of keep-alive connections. An
// http.Transport hands every request to a goroutine that writes it and the
// answer to another that reads it, one pair per connection; for a daemon
// answering thousands of calls a second on two cores those hand-offs cost
// more than fusebox's own work (docs/benchmarks.md, the serve section).
//
// What it does not handle goes to its base *http.Transport, which it was
// made from and whose settings it follows: https, a proxy from the
// environment (base's Proxy), a request that may not be sent again (a body
// without GetBody, or a method that is not idempotent without an
// Idempotency-Key: only the base notices an idle connection the server
// closed before sending on it), a body of unknown length or over 64 KiB,
// Expect, Upgrade, trailers, and any header
// the base would refuse, so that the base's error is the one returned.
//
// What it keeps of an http.Transport's behaviour: the request's context
// bounds the whole exchange, reading the body included (the connection is
// closed when it ends, and its error returned); a request that found its
// reused connection closed before any byte of the answer is sent once more
// on a new one; a connection is used again only after its body was read to
// the end and neither side said Connection: close; a gzip body it asked for
// (no Accept-Encoding of the caller's, no Range) is decoded; 1xx answers are
// skipped; the answer's header is bounded by MaxResponseHeaderBytes.
//
// A DirectTransport is safe for concurrent use.
type DirectTransport struct {
	base        *http.Transport
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle     int // per host
	maxIdleAll  int // 0: no limit
	idleTimeout time.Duration
	maxHeader   int64
	readSize    int
	writeSize   int

	mu      sync.Mutex
	idle    map[string][]*directConn // LIFO: the warmest connection first
	nidle   int
	sweeper *time.Timer
}

// NewDirectTransport returns a DirectTransport in front of base, or base
// itself when one of its settings is one a DirectTransport does not follow
// (DisableKeepAlives, MaxConnsPerHost, ResponseHeaderTimeout, a Dial or
// DialTLS of the old kind, ...).
func NewDirectTransport(base *http.Transport) http.RoundTripper {
	if base.DisableKeepAlives || base.MaxConnsPerHost != 0 || base.ResponseHeaderTimeout != 0 ||
		base.Dial != nil || base.DialTLS != nil || base.DialTLSContext != nil && base.DialContext == nil ||
		base.ExpectContinueTimeout < 0 {
		return base
	}
	t := &DirectTransport{
		base: base, dial: base.DialContext, maxIdle: base.MaxIdleConnsPerHost, maxIdleAll: base.MaxIdleConns,
		idleTimeout: base.IdleConnTimeout, maxHeader: base.MaxResponseHeaderBytes,
		readSize: base.ReadBufferSize, writeSize: base.WriteBufferSize,
		idle: map[string][]*directConn{},
	}
	if t.dial == nil {
		var d net.Dialer
		t.dial = d.DialContext
	}
	if t.maxIdle <= 0 {
		t.maxIdle = http.DefaultMaxIdleConnsPerHost
	}
	if t.maxHeader <= 0 {
		t.maxHeader = 10 << 20 // http.Transport's default
	}
	if t.readSize <= 0 {
		t.readSize = 4 << 10
	}
	if t.writeSize <= 0 {
		t.writeSize = 4 << 10
	}
	return t
}

// Base returns the http.Transport t falls back to.
func (t *DirectTransport) Base() *http.Transport { return t.base }

// CloseIdleConnections closes t's idle connections and its base's.
func (t *DirectTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nidle = map[string][]*directConn{}, 0
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.conn.Close()
		}
	}
	t.base.CloseIdleConnections()
}

var acceptGzip = []string{"gzip"}

// RoundTrip implements http.RoundTripper.
func (t *DirectTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	addr := req.URL.Host
	if port := req.URL.Port(); port == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	r, gzipAsked := req, false
	if get(req.Header, "Accept-Encoding") == "" && get(req.Header, "Range") == "" && req.Method != http.MethodHead &&
		!t.base.DisableCompression {
		// As http.Transport does: ask for gzip and decode it, so that the
		// caller sees the body itself. The caller's header is not changed.
		h := make(http.Header, len(req.Header)+1)
		for k, v := range req.Header {
			h[k] = v
		}
		h["Accept-Encoding"] = acceptGzip
		r = new(http.Request)
		*r = *req
		r.Header, gzipAsked = h, true
	}
	for fresh := false; ; fresh = true {
		var c *directConn
		if !fresh {
			c = t.take(addr)
		}
		reused := c != nil
		if c == nil {
			conn, err := t.dial(ctx, "tcp", addr)
			if err != nil {
				closeBody(r)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, err
			}
			c = t.newConn(addr, conn)
		}
		resp, err := c.roundTrip(ctx, r, gzipAsked)
		if err == nil {
			resp.Request = req
			return resp, nil
		}
		// The server closed a connection it had kept idle as the request
		// went out: nothing of an answer came, so the request is sent once
		// more on a new connection, as http.Transport does (only requests
		// that may be sent again come here).
		if !reused || fresh || c.cr.n > 0 || ctx.Err() != nil {
			return nil, err
		}
		if r.Body != nil && r.Body != http.NoBody {
			body, berr := r.GetBody()
			if berr != nil {
				return nil, err
			}
			again := new(http.Request)
			*again = *r
			again.Body = body
			r = again
		}
	}
}

// maxDirectBody bounds the request bodies a DirectTransport sends: it
// writes the whole request before it reads, so a server that answers early
// and stops reading a body larger than the socket's buffers would leave it
// blocked where http.Transport, reading as it writes, gets the answer.
const maxDirectBody = 64 << 10

// handles reports whether req is one a DirectTransport sends itself.
func (t *DirectTransport) handles(req *http.Request) bool {
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && (req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxDirectBody) {
		return false
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	if !idempotent(req.Method) && !key && !xkey {
		return false
	}
	if len(req.Trailer) > 0 || len(req.TransferEncoding) > 0 || !validHost(req.Host) || !validHost(u.Host) {
		return false
	}
	for k, vs := range req.Header {
		if !httpsyntax.Token(k) {
			return false
		}
		switch k {
		case "Expect", "Upgrade", "Te", "Transfer-Encoding":
			return false
		}
		for _, v := range vs {
			if !httpsyntax.FieldValue(v) {
				return false
			}
		}
	}
	if t.base.Proxy != nil {
		if p, err := t.base.Proxy(req); err != nil || p != nil {
			return false
		}
	}
	return true
}

// validHost accepts the characters a host and port are made of; anything
// else is the base's to refuse in its own words.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_:[]", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// directConn is one connection of the pool. Only the goroutine of the
// request using it touches it, or the pool while it is idle.
type directConn struct {
	t      *DirectTransport
	addr   string
	conn   net.Conn
	cr     connReader
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
}

func (t *DirectTransport) newConn(addr string, conn net.Conn) *directConn {
	c := &directConn{t: t, addr: addr, conn: conn}
	c.cr.conn = conn
	c.br = bufio.NewReaderSize(&c.cr, t.readSize)
	c.bw = bufio.NewWriterSize(conn, t.writeSize)
	return c
}

// connReader counts what a request read from its connection, and bounds
// what the answer's header may take.
type connReader struct {
	conn  net.Conn
	n     int64 // bytes read since the request was sent
	limit int64 // bytes it may still read; the header's bound while it is read
	max   int64
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.limit <= 0 {
		return 0, fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", r.max)
	}
	if int64(len(p)) > r.limit {
		p = p[:r.limit]
	}
	n, err := r.conn.Read(p)
	r.n += int64(n)
	r.limit -= int64(n)
	return n, err
}

// aLongTimeAgo is a deadline in the past: it wakes a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

// errTooMany1xx is http.Transport's own words.
var errTooMany1xx = errors.New("net/http: too many 1xx informational responses")

func (c *directConn) roundTrip(ctx context.Context, req *http.Request, gzipAsked bool) (*http.Response, error) {
	c.cr.n, c.cr.limit, c.cr.max = 0, c.t.maxHeader, c.t.maxHeader
	conn := c.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	// The errors are worded as http.Transport words them: a failure's
	// reason is its text when nothing more telling can be said of it.
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err))
	}
	var resp *http.Response
	for n1xx := 0; ; n1xx++ {
		var err error
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			if c.cr.n == 0 {
				return fail(fmt.Errorf("net/http: Transport failed to read from server: %w", err))
			}
			return fail(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err))
		}
		if resp.StatusCode >= 200 || resp.StatusCode < 100 {
			break
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return fail(errors.New("net/http: unexpected 101 Switching Protocols to a request that asked for no upgrade"))
		}
		if n1xx == 5 {
			return fail(errTooMany1xx)
		}
		c.cr.limit = c.t.maxHeader
	}
	c.cr.limit = math.MaxInt64
	reuse := !resp.Close && !req.Close && !hasToken(req.Header["Connection"], "close")
	if resp.Body == http.NoBody {
		c.release(stop() && reuse)
		return resp, nil
	}
	b := &directBody{c: c, body: resp.Body, ctx: ctx, stop: stop, reuse: reuse}
	resp.Body = b
	if gzipAsked && strings.EqualFold(get(resp.Header, "Content-Encoding"), "gzip") {
		resp.Body = &gzipBody{body: b}
		resp.Header.Del("Content-Encoding")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
		resp.Uncompressed = true
	}
	return resp, nil
}

// hasToken reports whether one of the comma-separated values holds tok.
func hasToken(values []string, tok string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), tok) {
				return true
			}
		}
	}
	return false
}

// release gives c back to the pool, or closes it.
func (c *directConn) release(keep bool) {
	if !keep || c.br.Buffered() > 0 { // bytes past the answer: nothing asked for them
		c.conn.Close()
		return
	}
	c.t.put(c)
}

func (t *DirectTransport) take(addr string) *directConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := t.idle[addr]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	list[len(list)-1] = nil
	t.idle[addr] = list[:len(list)-1]
	t.nidle--
	return c
}

func (t *DirectTransport) put(c *directConn) {
	t.mu.Lock()
	list := t.idle[c.addr]
	if len(list) >= t.maxIdle || t.maxIdleAll > 0 && t.nidle >= t.maxIdleAll {
		t.mu.Unlock()
		c.conn.Close()
		return
	}
	c.idleAt = time.Now()
	t.idle[c.addr] = append(list, c)
	t.nidle++
	if t.idleTimeout > 0 && t.sweeper == nil {
		t.sweeper = time.AfterFunc(t.idleTimeout, t.sweep)
	}
	t.mu.Unlock()
}

// sweep closes the connections idle for longer than the idle timeout, and
// comes back while some are left.
func (t *DirectTransport) sweep() {
	var old []*directConn
	t.mu.Lock()
	cut := time.Now().Add(-t.idleTimeout)
	for addr, list := range t.idle {
		n := 0
		for n < len(list) && !list[n].idleAt.After(cut) { // oldest first
			n++
		}
		old = append(old, list[:n]...)
		rest := append(list[:0:0], list[n:]...)
		if len(rest) == 0 {
			delete(t.idle, addr)
		} else {
			t.idle[addr] = rest
		}
		t.nidle -= n
	}
	t.sweeper = nil
	if t.nidle > 0 {
		t.sweeper = time.AfterFunc(t.idleTimeout/2+time.Millisecond, t.sweep)
	}
	t.mu.Unlock()
	for _, c := range old {
		c.conn.Close()
	}
}

// errClosedBody is http.Transport's word for a read after Close.
var errClosedBody = errors.New("http: read on closed response body")

// directBody is an answer's body. Its connection goes back to the pool when
// the body has been read to its end, and is closed when the body is closed
// before, when reading it fails or when the request's context ends.
type directBody struct {
	c     *directConn
	body  io.ReadCloser
	ctx   context.Context
	stop  func() bool
	reuse bool

	mu   sync.Mutex
	done error // io.EOF or errClosedBody once the connection is released
}

func (b *directBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done != nil {
		return 0, done
	}
	n, err := b.body.Read(p)
	switch {
	case err == io.EOF:
		b.finish(io.EOF, b.reuse)
	case err != nil:
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
		b.finish(err, false)
	}
	return n, err
}

func (b *directBody) Close() error {
	b.finish(errClosedBody, false)
	return nil
}

func (b *directBody) finish(why error, keep bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done != nil {
		return
	}
	b.done = why
	b.c.release(b.stop() && keep)
}

// gzipBody decodes a gzip body, its reader made at the first Read.
type gzipBody struct {
	body *directBody
	zr   *gzip.Reader
	err  error
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		zr, err := gzip.NewReader(g.body)
		if err != nil {
			g.err = err
			return 0, err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
	}
	return n, err
}

func (g *gzipBody) Close() error { return g.body.Close() }
