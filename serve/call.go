package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/status"
)

// Headers the daemon adds to an answer.
const (
	HeaderSource   = "X-Fusebox-Source"    // the endpoint that answered, or fresh / stale
	HeaderAnswered = "X-Fusebox-Answered"  // for fresh and stale: the endpoint the stored answer came from
	HeaderAttempts = "X-Fusebox-Attempts"  // attempts made for this request
	HeaderStaleAge = "X-Fusebox-Stale-Age" // whole seconds, on a stale answer
	HeaderShared   = "X-Fusebox-Shared"    // "true": the answer of another caller's call, made at the same moment
)

// hopHeaders are not passed on from an upstream's response: they describe
// its connection, or the framing of a body the daemon writes anew. A
// Content-Encoding passes on: httpcall decodes gzip and drops the header, so
// one still there says how the body the daemon passes on is encoded. Each
// is written canonically: answer drops it as it is.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade", "Trailer", "Te",
	"Content-Length",
}

func (s *Server) handleCall(w http.ResponseWriter, r *http.Request) {
	if reason := fromAnotherSite(r); reason != "" {
		refuseAndClose(w, http.StatusForbidden, reason)
		return
	}
	name := r.PathValue("name")
	wd := s.world.Load()
	// Answers before the body is read close the connection (see
	// closeAfterAnswer).
	if !wd.targets.Has(name) {
		closeAfterAnswer(w)
		writeJSON(w, http.StatusNotFound, problem{Error: "no such endpoint or chain in the config", Name: name})
		return
	}
	if m := wd.unsafe[name]; m != "" && isSafe(r.Method) {
		// What goes upstream is an unsafe request: a GET, which a page on
		// any site can have a browser send (an <img src>, with no
		// cross-origin check), must not send it.
		w.Header().Set("Allow", "POST")
		closeAfterAnswer(w)
		writeJSON(w, http.StatusMethodNotAllowed, problem{Error: name + " sends a " + m + " upstream: call it with POST", Name: name})
		return
	}
	if r.ContentLength > s.o.MaxRequestBody {
		refuseAndClose(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	var body []byte
	if r.Body != http.NoBody { // the server's body of a request without one: nothing to read
		// Within the daemon's body budget, as upstream bodies are read, and
		// held until the call ends.
		var err error
		var release func()
		body, release, err = s.bodyMemory.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxRequestBody), r.ContentLength, s.o.MaxRequestBody)
		defer release()
		if err != nil {
			if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
				refuseAndClose(w, http.StatusRequestEntityTooLarge, "request body too large")
			} else if errors.Is(err, httpcall.ErrNoBodyMemory) {
				refuseAndClose(w, http.StatusServiceUnavailable, err.Error())
			} else {
				refuseAndClose(w, http.StatusRequestTimeout, "request body not received in time")
			}
			return
		}
		clearReadDeadline(w) // the call may take longer than the body did
	}
	opt := httpcall.CallOptions{Subpath: r.PathValue("rest")}
	var q url.Values
	if r.URL.RawQuery != "" {
		q = r.URL.Query()
	}
	wait, err := callerWait(r, q, s.o.Wait)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, problem{Error: err.Error(), Name: name})
		return
	}
	if q.Has(QueryWait) {
		q.Del(QueryWait) // the daemon's, not the upstream's
	}
	if len(q) > 0 {
		opt.Query = q
	}
	budget := CallBudget(wait)
	opt.StoreGrace = (wait - budget) / 2 // a stale answer read late still reaches the caller
	if len(body) > 0 {
		opt.Body = body
	}

	began := time.Now()
	// Whatever the call, or a store after it, takes, the answer is written
	// by then: the last quarter of the margin writes it.
	actx, cancel := context.WithTimeout(r.Context(), answerBy(wait))
	defer cancel()
	call := func(ctx context.Context) (res *httpcall.Result, err error) {
		defer func() {
			// A bug below must not take the daemon down with it: the call
			// runs on a goroutine of its own, where a panic would.
			if p := recover(); p != nil {
				s.log.Error("a call panicked", "name", name, "panic", p, "stack", string(debug.Stack()))
				res, err = nil, errCallPanicked
			}
		}()
		full, release := s.inFlight.acquire(wd.endpointsOf(name), wd.limits)
		if full != "" {
			return nil, &busyError{endpoint: full}
		}
		defer release()
		res, err = wd.client.Call(ctx, name, opt)
		if s.o.OnCall != nil {
			s.o.OnCall(name, err)
		}
		return res, err
	}
	var got <-chan singleflight.Result
	ran := true // false for a GET until its shared call runs here
	if r.Method == http.MethodGet && opt.Body == nil {
		// Callers asking for the same at the same moment share one call,
		// which goes on when the caller that started it leaves: it runs
		// under a context of its own, not the request's (it is no one
		// request's, and nothing below reads a context's values; through
		// context.WithoutCancel the HTTP transport's few lookups cost an
		// allocation each). The key holds the query as the caller wrote
		// it: the same parameters in another order make a call of their
		// own, which is only less sharing.
		// Callers that wait for as long share it: the call has that long.
		// Its result is every sharer's, read-only. Only the callers that
		// did not run it are told so: singleflight's shared flag is set
		// for the one that ran it too.
		key := flightKey(name, opt.Subpath, r.URL.RawQuery, budget)
		ran = false
		got = s.calls.DoChan(key, func() (any, error) {
			ran = true // read only after the result, which comes after this
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			return call(ctx)
		})
	} else {
		ch := make(chan singleflight.Result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(r.Context(), budget)
			defer cancel()
			res, err := call(ctx)
			ch <- singleflight.Result{Val: res, Err: err}
		}()
		got = ch
	}
	first := name // the endpoint a call's metrics are labelled with
	if eps := wd.catalog.Chains[name]; len(eps) > 0 {
		first = eps[0]
	}
	var res *httpcall.Result
	select {
	case out := <-got:
		res, _ = out.Val.(*httpcall.Result)
		err = out.Err
		if !ran {
			w.Header().Set(HeaderShared, "true")
		}
	case <-actx.Done():
		// The call goes on without this caller, and records its outcome:
		// a shutdown waits for it (Serve).
		s.gaveUp.Add(1)
		go func() {
			<-got
			s.gaveUp.Done()
		}()
		if r.Context().Err() != nil {
			s.counters.observe(name, first, "", 499, time.Since(began))
			return // the caller was let go; the call goes on, and records
		}
		s.log.Warn("no answer within the caller's wait: the call, or a store after it, is slow", "name", name, "wait", wait)
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((wait+time.Second-1)/time.Second))))
		writeJSON(w, http.StatusServiceUnavailable, problem{Error: fmt.Sprintf("no answer within the caller's wait of %s", wait), Name: name})
		s.counters.observe(name, first, "", http.StatusServiceUnavailable, time.Since(began))
		return
	}
	if err != nil {
		waited := time.Duration(0)
		if time.Since(began) >= budget {
			waited = wait // the caller's wait ran out: nothing came in time
		}
		code := s.failed(actx, w, r, wd, name, res, err, waited)
		s.counters.observe(name, first, "", code, time.Since(began))
		return
	}
	s.counters.observe(name, first, res.Source, res.Status, time.Since(began))
	s.answer(w, res)
}

// errCallPanicked is the error of a call that panicked (logged with its
// stack): the callers sharing it get a 500, and the daemon goes on.
var errCallPanicked = errors.New("the call failed unexpectedly")

// flightKey is the key under which GET callers share a call: the same
// name, subpath and query as written, and the same budget.
func flightKey(name, subpath, rawQuery string, budget time.Duration) string {
	return name + "\x00" + subpath + "\x00" + rawQuery + "\x00" + strconv.FormatInt(int64(budget), 10)
}

// originHeaders are an upstream's response headers that would act on the
// daemon's own origin, where its status page and token live: none is
// passed on, whatever the upstream is. Each is written canonically.
var originHeaders = []string{
	"Set-Cookie", "Set-Cookie2", "Clear-Site-Data", "Content-Security-Policy",
	"Content-Security-Policy-Report-Only", "Refresh", "Service-Worker-Allowed",
	"Strict-Transport-Security", "Alt-Svc", "Origin-Agent-Cluster",
}

// answerCSP is the Content-Security-Policy of every answer: one opened in
// a browser runs nothing and loads nothing, as a sandboxed document of an
// opaque origin.
const answerCSP = "default-src 'none'; sandbox"

// isCORS reports whether k names a CORS header, in any case.
func isCORS(k string) bool {
	const prefix = "Access-Control-"
	return len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix)
}

// fromAnotherSite returns why a call asked by a page of another site or
// origin is refused, or "" when it is not: a call runs with the config's
// credentials, and its answer is no other page's to have, nor its side
// effects (calls upstream, a circuit tripped) any page's to cause, GET or
// not. A browser says where a request comes from in Sec-Fetch-Site (every
// current one) or Origin; the status page is same-origin, and a caller
// that is not a browser (curl, n8n, Node-RED) sends neither.
func fromAnotherSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "a call from a page of another site (Sec-Fetch-Site: " + site + ") refused: /call answers non-browser callers and the daemon's own page"
	case "same-origin", "none":
		return ""
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "a call from a page of another origin (Origin: " + o + ") refused: /call answers non-browser callers and the daemon's own page"
		}
		return ""
	}
	// A browser sends neither header to a URL that is not potentially
	// trustworthy (http://fusebox.lan): there an <img>, a <script>, an
	// <iframe> or a no-cors fetch of any site's page looks like any
	// caller's GET. What such a request cannot carry is a header of the
	// daemon's own: setting one makes a page's request need a preflight,
	// which the daemon never grants. A browser's, by the User-Agent every
	// browser sends and no page may change without one, must carry it.
	if strings.Contains(r.Header.Get("User-Agent"), "Mozilla/") && !hasOwnHeader(r) {
		return "a browser's call without " + HeaderWait + " refused: a page of any site could have made it; a caller in a browser sends " + HeaderWait
	}
	return ""
}

// hasOwnHeader reports whether r carries a header that no page can have a
// browser send without a CORS preflight: the caller's wait or a token.
func hasOwnHeader(r *http.Request) bool {
	return r.Header.Get(HeaderWait) != "" || r.Header.Get("X-Fusebox-Token") != "" || r.Header.Get("Authorization") != ""
}

// busyError is a call refused because an endpoint has max_in_flight calls
// running.
type busyError struct{ endpoint string }

func (e *busyError) Error() string {
	return e.endpoint + ": max_in_flight calls are running already"
}

// answer writes an answer: the upstream's status, headers and body, or an
// extraction or stored answer with a content type of its own.
func (s *Server) answer(w http.ResponseWriter, res *httpcall.Result) {
	h := w.Header()
	before := len(h)
	for k, vs := range res.Header {
		// Del(k) would delete k only when canonical: so does this. An
		// upstream's CORS grants (Access-Control-Allow-Origin: * is common)
		// are not the daemon's: passed on, they would let any site's page
		// read answers made with the config's credentials.
		if !slices.Contains(hopHeaders, k) && !isCORS(k) && !slices.Contains(originHeaders, k) {
			h[k] = vs
		}
	}
	if before > 0 { // set before the answer (X-Fusebox-Shared): one may be a hop header too
		for _, k := range hopHeaders {
			delete(h, k) // h.Del(k), without canonicalizing k again
		}
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", answerCSP)
	if res.Header == nil {
		if json.Valid(res.Body) {
			h.Set("Content-Type", "application/json")
		} else {
			h.Set("Content-Type", http.DetectContentType(res.Body))
		}
	}
	// The three headers every answer has share one allocation, each value
	// capped at its own element; their names are canonical already.
	own := []string{res.Source, strconv.Itoa(res.Attempts), strconv.Itoa(len(res.Body))}
	h[HeaderSource], h[HeaderAttempts], h["Content-Length"] = own[0:1:1], own[1:2:2], own[2:3:3]
	if res.Source == httpcall.SourceFresh || res.Source == httpcall.SourceStale {
		h.Set(HeaderAnswered, res.Answered)
		h.Set("Age", strconv.Itoa(int(res.Age/time.Second)))
	}
	if res.Source == httpcall.SourceStale {
		h.Set(HeaderStaleAge, strconv.Itoa(int(res.Age/time.Second)))
	}
	code := res.Status
	if code < 100 || code > 999 {
		code = http.StatusOK
	}
	w.WriteHeader(code)
	_, _ = w.Write(res.Body)
}

// failed answers a call that nothing could answer: 503 naming each
// endpoint's failure or open circuit, with Retry-After when a circuit says
// when it may be probed, or, when the caller's wait ran out (waited), after
// as long as it waited; a call whose connection the daemon closed (at the
// end of the shutdown grace) gets nothing. It returns the status it
// answered with.
func (s *Server) failed(ctx context.Context, w http.ResponseWriter, r *http.Request, wd *world, name string, res *httpcall.Result, err error, waited time.Duration) int {
	if r.Context().Err() != nil {
		return 499 // the caller was let go; nginx's name for a caller gone
	}
	var busy *busyError
	if errors.As(err, &busy) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, problem{Error: busy.Error(), Name: name})
		return http.StatusServiceUnavailable
	}
	if errors.Is(err, httpcall.ErrQueryTooLarge) { // the guard refuses it first; a caller's mistake all the same
		writeJSON(w, http.StatusBadRequest, problem{Error: err.Error(), Name: name})
		return http.StatusBadRequest
	}
	if errors.Is(err, httpcall.ErrNotAllowed) {
		writeJSON(w, http.StatusForbidden, problem{Error: wd.client.Redactor().String(err.Error()), Name: name})
		return http.StatusForbidden
	}
	var ce *httpcall.CallError
	if !errors.As(err, &ce) {
		writeJSON(w, http.StatusInternalServerError, problem{Error: wd.client.Redactor().String(err.Error()), Name: name})
		return http.StatusInternalServerError
	}
	p := problem{Error: httpcall.ErrAllFailed.Error(), Name: name}
	if ce.AllSkipped {
		p.Error = httpcall.ErrAllSkipped.Error()
	}
	for _, e := range ce.Errors {
		p.Errors = append(p.Errors, endpointError{Name: e.Name, Reason: e.Reason, Skipped: e.Skipped})
	}
	if res != nil {
		w.Header().Set(HeaderAttempts, strconv.Itoa(res.Attempts))
	}
	if d, ok := s.retryAfter(ctx, ce.Errors); ok {
		w.Header().Set("Retry-After", strconv.Itoa(d))
	} else if waited > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int((waited+time.Second-1)/time.Second))))
	}
	writeJSON(w, http.StatusServiceUnavailable, p)
	return http.StatusServiceUnavailable
}

// retryAfter returns, in whole seconds rounded up, how long until the first
// of the endpoints' open circuits may be probed; at least 1 when one is
// half-open with its probe taken. It reports false when none is open.
func (s *Server) retryAfter(ctx context.Context, errs []httpcall.EndpointError) (int, bool) {
	now := s.o.Clock.Now()
	best, found := time.Duration(math.MaxInt64), false
	for _, e := range errs {
		st, err := s.o.Store.Load(ctx, e.Name)
		if err != nil {
			continue
		}
		row := status.CircuitRow(st, fusebox.Counts{}, now)
		switch {
		case row.ReopensIn > 0:
			best, found = min(best, row.ReopensIn), true
		case row.State == string(breaker.HalfOpen):
			best, found = min(best, time.Second), true
		}
	}
	if !found {
		return 0, false
	}
	return max(1, int((best+time.Second-1)/time.Second)), true
}
