package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-hq/fusebox/internal/httpsyntax"
)

// http1 is the daemon's HTTP/1.1 server: a connection loop around net/http's
// own request parser (http.ReadRequest) that hands each request to an
// http.Handler and writes its answer whole, with a Content-Length.
//
// It is what http.Server does for the daemon, without what the daemon does
// not use and every request paid for: a goroutine per request reading ahead
// on the connection (to notice a caller that leaves; here a call runs on to
// its deadline, as a shared GET call does anyway), a cancelable context per
// request, chunked framing, and a buffered writer taken from a pool and
// given back per request. Under load that was about a tenth of the daemon's
// CPU per request (docs/benchmarks.md, the serve section). A request's
// context ends when its connection is closed under it: at the end of the
// shutdown grace (close).
//
// It serves HTTP/1.0 and 1.1 with keep-alive, answers "Expect:
// 100-continue", refuses a header longer than maxHeaderBytes with 431 and a
// malformed request with 400, waits idleTimeout for a request and
// readHeaderTimeout for its header, and on shutdown lets the requests being
// served finish while it closes idle connections. It is not a general
// server: no TLS, no HTTP/2, no streaming (answers are bounded by max_body),
// no Hijack or Flush.
type http1 struct {
	handler           http.Handler
	readHeaderTimeout time.Duration
	idleTimeout       time.Duration
	maxHeaderBytes    int
	base              context.Context // every connection's context is one of its children
	log               *slog.Logger

	closing atomic.Bool
	mu      sync.Mutex
	ln      net.Listener
	conns   map[*h1conn]struct{}
	wg      sync.WaitGroup // the connections' goroutines
}

// A connection's state, for shutdown: an idle one is closed at once, an
// active one when its answer is written.
const (
	connIdle int32 = iota
	connActive
	connClosed
)

type h1conn struct {
	nc     net.Conn
	state  atomic.Int32
	ctx    context.Context    // every request's on the connection
	cancel context.CancelFunc // ends ctx: the connection is closed under its request
}

// serve accepts connections on ln until shutdown or close, and then returns
// http.ErrServerClosed, or the error that stopped it accepting.
func (s *http1) serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.conns = map[*h1conn]struct{}{}
	s.mu.Unlock()
	var pause time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) { // out of file descriptors, say: wait, as http.Server does
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				s.log.Warn("accepting a connection", "err", err, "retry_in", pause)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		c := &h1conn{nc: nc}
		c.ctx, c.cancel = context.WithCancel(s.base)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			c.cancel()
			nc.Close()
			return http.ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c)
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// shutdown stops accepting, closes the idle connections and waits until the
// others have written their answers, or ctx ends (its error then).
func (s *http1) shutdown(ctx context.Context) error {
	s.stop(false)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
			// A connection that went idle after the first sweep is
			// closed by itself (serveConn looks at closing); this sweep
			// catches one that was new, between accept and its first read.
			s.stop(false)
		}
	}
}

// close closes every connection, ending the requests being served.
func (s *http1) close() {
	s.stop(true)
	s.wg.Wait()
}

func (s *http1) stop(all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing.Swap(true) && s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		if c.state.CompareAndSwap(connIdle, connClosed) {
			c.nc.Close()
		} else if all && c.state.Swap(connClosed) != connClosed {
			c.cancel()
			c.nc.Close()
		}
	}
}

// maxDiscard is how much of a request body the handler left unread is read
// and dropped to keep the connection; past it the connection is closed.
const maxDiscard = 256 << 10

func (s *http1) serveConn(c *h1conn) {
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler {
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			s.log.Error("panic serving a request", "remote", c.nc.RemoteAddr(), "panic", p, "stack", string(buf))
		}
		c.cancel()
		c.state.Store(connClosed)
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	remote := c.nc.RemoteAddr().String()
	lr := &io.LimitedReader{R: c.nc}
	br := bufio.NewReaderSize(lr, 4<<10)
	bw := bufio.NewWriterSize(c.nc, 4<<10)
	w := &h1response{bw: bw}
	for {
		// The header may take maxHeaderBytes, and the reader's buffer
		// what follows it, as http.Server allows.
		lr.N = int64(s.maxHeaderBytes) + 4096
		if br.Buffered() == 0 {
			c.nc.SetReadDeadline(time.Now().Add(s.idleTimeout))
			if _, err := br.Peek(1); err != nil {
				return
			}
		}
		if !c.state.CompareAndSwap(connIdle, connActive) {
			return // shut down while idle
		}
		c.nc.SetReadDeadline(time.Now().Add(s.readHeaderTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			switch {
			case lr.N == 0:
				writeError(bw, http.StatusRequestHeaderFieldsTooLarge, "")
				linger(c.nc)
			case quiet(err): // closed, reset or timed out: no one to answer
			case strings.Contains(err.Error(), "unsupported transfer encoding"):
				writeError(bw, http.StatusNotImplemented, "unsupported transfer encoding")
			default:
				writeError(bw, http.StatusBadRequest, "")
			}
			return
		}
		lr.N = math.MaxInt64
		c.nc.SetReadDeadline(time.Time{})
		if code, msg := checkRequest(req); code != 0 {
			writeError(bw, code, msg)
			return
		}
		req.RemoteAddr = remote
		req = req.WithContext(c.ctx)
		w.reset(req)
		if expect := req.Header.Get("Expect"); expect != "" {
			if !strings.EqualFold(expect, "100-continue") {
				w.WriteHeader(http.StatusExpectationFailed)
				w.finish(false)
				bw.Flush()
				return
			}
			if req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
				req.Body = &continueReader{ReadCloser: req.Body, w: w}
				w.mustContinue = true
			}
		}
		s.handler.ServeHTTP(w, req)
		// unread: the caller may still be sending a body: one it was not
		// told to continue with, or more than is dropped to go on.
		unread := w.mustContinue && !w.continued
		keep := !req.Close && !s.closing.Load() && !unread
		if keep && req.Body != http.NoBody {
			// What the handler left of the body stands between this
			// request and the next: up to maxDiscard of it is dropped.
			n, err := io.CopyN(io.Discard, req.Body, maxDiscard+1)
			keep = err == io.EOF && n <= maxDiscard
			unread = !keep
		}
		keep = w.finish(keep)
		if !keep || br.Buffered() == 0 {
			if err := bw.Flush(); err != nil {
				return
			}
		}
		if !keep {
			if unread {
				linger(c.nc)
			}
			return
		}
		if !c.state.CompareAndSwap(connActive, connIdle) {
			return // closed by close()
		}
		if s.closing.Load() && c.state.CompareAndSwap(connIdle, connClosed) {
			return // shut down between this answer and the next request
		}
	}
}

// lingerTime is how long linger waits for the caller to stop sending.
const lingerTime = 500 * time.Millisecond

// linger ends the connection's sending side and reads what the caller still
// sends, for at most lingerTime, before the connection is closed: closed
// with unread bytes, it would be reset, and the reset could reach the
// caller before the answer it was just sent (http.Server waits the same).
func linger(nc net.Conn) {
	cw, ok := nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	nc.SetReadDeadline(time.Now().Add(lingerTime))
	io.Copy(io.Discard, nc)
}

// quiet reports whether a failed read of a request gets no answer: the
// connection closed, was reset or timed out, between requests or inside one.
func quiet(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne)
}

// checkRequest returns the status and words refusing a parsed request, or 0.
// It holds what http.Server checks past http.ReadRequest, which refused a
// second Host header and moved the first to r.Host (or took the host of an
// absolute-form URL).
func checkRequest(r *http.Request) (int, string) {
	switch {
	case r.ProtoMajor != 1:
		return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
	case r.Host == "" && r.ProtoAtLeast(1, 1) && r.Method != http.MethodConnect:
		return http.StatusBadRequest, "missing required Host header"
	case !validHost(r.Host):
		return http.StatusBadRequest, "malformed Host header"
	}
	for k, vs := range r.Header {
		if !httpsyntax.Token(k) {
			return http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vs {
			if !httpsyntax.FieldValue(v) {
				return http.StatusBadRequest, "invalid header value"
			}
		}
	}
	return 0, ""
}

// validHost reports whether h holds only the bytes a Host header may.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// writeError answers a request that was not handed to the handler, as
// http.Server does, and the connection is then closed.
func writeError(bw *bufio.Writer, code int, msg string) {
	status := strconv.Itoa(code) + " " + http.StatusText(code)
	if msg != "" {
		status += ": " + msg
	}
	body := status
	switch code {
	case http.StatusNotImplemented:
		body = "Unsupported transfer encoding"
	}
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body)
	bw.Flush()
}

// h1response is the http.ResponseWriter of h1: it holds the answer until
// the handler returns and then writes it with its length. One per
// connection, reset for each request.
type h1response struct {
	bw           *bufio.Writer
	req          *http.Request
	header       http.Header
	code         int
	body         []byte
	headLen      int  // what the handler wrote in answer to a HEAD, counted and dropped
	mustContinue bool // "Expect: 100-continue" asked for and not yet answered
	continued    bool
	keys         []string // scratch for the header's sorted keys
}

func (w *h1response) reset(req *http.Request) {
	w.req = req
	if w.header == nil {
		w.header = make(http.Header, 8)
	} else {
		clear(w.header) // a handler keeps nothing of its answer's header past its return
	}
	w.code = 0
	w.body = w.body[:0]
	w.headLen = 0
	w.mustContinue, w.continued = false, false
}

func (w *h1response) Header() http.Header { return w.header }

func (w *h1response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.code != 0 {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational: nothing the daemon sends
	}
	w.code = code
}

func (w *h1response) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.code == http.StatusNoContent || w.code == http.StatusNotModified:
		return 0, http.ErrBodyNotAllowed
	case w.req.Method == http.MethodHead:
		w.headLen += len(p)
	default:
		w.body = append(w.body, p...)
	}
	return len(p), nil
}

// finish writes the answer into the connection's buffer, saying whether the
// connection stays open (keep, unless the handler said Connection: close),
// and reports that.
func (w *h1response) finish(keep bool) bool {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	h := w.header
	if strings.EqualFold(h.Get("Connection"), "close") {
		keep = false
	}
	switch {
	case !keep:
		h.Set("Connection", "close")
	case !w.req.ProtoAtLeast(1, 1):
		h.Set("Connection", "keep-alive") // an HTTP/1.0 caller that asked for it (else req.Close)
	default:
		delete(h, "Connection")
	}
	delete(h, "Transfer-Encoding") // the answer is written whole, with its length
	if w.code != http.StatusNoContent && w.code != http.StatusNotModified {
		switch {
		case w.req.Method != http.MethodHead:
			h["Content-Length"] = []string{strconv.Itoa(len(w.body))}
		case len(h["Content-Length"]) == 0 && w.headLen > 0:
			h["Content-Length"] = []string{strconv.Itoa(w.headLen)} // as http.Server: what a GET would get
		}
		if _, ok := h["Content-Type"]; !ok && len(w.body) > 0 && len(h["Content-Encoding"]) == 0 {
			h["Content-Type"] = []string{http.DetectContentType(w.body)}
		}
	} else {
		delete(h, "Content-Length")
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = []string{httpDate()}
	}
	bw := w.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.code))
	bw.WriteByte(' ')
	if text := http.StatusText(w.code); text != "" {
		bw.WriteString(text)
	} else {
		bw.WriteString("status code " + strconv.Itoa(w.code))
	}
	bw.WriteString("\r\n")
	w.keys = w.keys[:0]
	for k := range h {
		w.keys = append(w.keys, k)
	}
	slices.Sort(w.keys)
	for _, k := range w.keys {
		if !httpsyntax.Token(k) {
			continue // as http.Server drops it
		}
		for _, v := range h[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			writeFieldValue(bw, v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	bw.Write(w.body)
	if cap(w.body) > 64<<10 {
		w.body = nil // a big answer's buffer is not kept for the next
	}
	return keep
}

// writeFieldValue writes v with CR and LF made spaces, as http.Header.Write
// does, so that no value can start a header of its own.
func writeFieldValue(bw *bufio.Writer, v string) {
	for {
		i := strings.IndexAny(v, "\r\n")
		if i < 0 {
			bw.WriteString(v)
			return
		}
		bw.WriteString(v[:i])
		bw.WriteByte(' ')
		v = v[i+1:]
	}
}

// continueReader sends "100 Continue" before the first read of a body whose
// caller asked for it.
type continueReader struct {
	io.ReadCloser
	w *h1response
}

func (r *continueReader) Read(p []byte) (int, error) {
	if w := r.w; !w.continued {
		w.continued = true
		w.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := w.bw.Flush(); err != nil {
			return 0, err
		}
	}
	return r.ReadCloser.Read(p)
}

// httpDate is the Date header's value, made once a second.
func httpDate() string {
	now := time.Now()
	sec := now.Unix()
	if d := cachedDate.Load(); d != nil && d.sec == sec {
		return d.text
	}
	d := &dateText{sec: sec, text: now.UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	sec  int64
	text string
}

var cachedDate atomic.Pointer[dateText]
