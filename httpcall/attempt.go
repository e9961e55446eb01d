package httpcall

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// answer is what a successful attempt got.
type answer struct {
	status    int
	header    http.Header // the response's, when body is the raw body
	extracted bool
	body      []byte // the extraction, or the raw body
}

// attempt makes one request to ep and judges what came back. Its error is a
// *fusebox.Failure telling Do whether to retry and whether the failure counts
// against the breaker; its reason is redacted.
func (c *Client) attempt(ctx context.Context, ep *endpoint, pp *parts) (answer, error) {
	req, err := ep.request(ctx, pp)
	if err != nil {
		return answer{}, c.failure(ep, breaker.CauseOther, "cannot build the request: "+innermost(err), false, false)
	}
	if c.log.Enabled(ctx, slog.LevelDebug) {
		// Redacted here, when it is logged: redacting compiles the
		// credential patterns, which a call that logs nothing never needs.
		u := ep.URL
		if pp != nil {
			u = pp.url
		}
		u = c.red.URL(u)
		c.log.Debug("request", "endpoint", ep.Name, "method", ep.Method, "url", u)
	}
	resp, err := ep.http.Do(req)
	if err != nil {
		return answer{}, c.judged(ep, judgeError(ctx, err, ep.rules()))
	}
	defer resp.Body.Close()
	if f := c.judgeStatus(ep, resp); f != nil {
		drain(resp.Body)
		return answer{}, f
	}
	body, share, f := c.readBody(ctx, ep, resp)
	if share != nil {
		defer share.giveBack() // the body is held until the attempt ends
	}
	if f != nil {
		return answer{}, f
	}
	out, f := c.checkBody(ctx, ep, body)
	if f != nil {
		return answer{}, f
	}
	return answer{status: resp.StatusCode, header: resp.Header, extracted: ep.extract != nil, body: out}, nil
}

func (ep *endpoint) request(ctx context.Context, pp *parts) (*http.Request, error) {
	target, text := ep.URL, []byte(ep.Body)
	if pp != nil {
		target = pp.url
		if pp.body != nil {
			text = pp.body
		}
	}
	var body io.Reader
	if len(text) > 0 {
		body = bytes.NewReader(text)
	}
	req, err := http.NewRequestWithContext(ctx, ep.Method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header["User-Agent"] = userAgent[:1:1] // Set("User-Agent", "fusebox"), without a slice of its own
	for k, v := range ep.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req, nil
}

// userAgent is the value of every request's User-Agent header, shared by
// all of them: a request's header values are only read (a RoundTripper must
// not change the request; http.Client clones the header for a redirect),
// and an append to it copies, its capacity being its length.
var userAgent = []string{"fusebox"}

// rules are ep's retry rules for the shared judge.
func (ep *endpoint) rules() rules {
	return rules{
		retryOn:    ep.RetryOn,
		tripOn4xx:  ep.TripOn4xx,
		accept:     ep.statusOK,
		repeatable: ep.RetryUnsafe || idempotent(ep.Method),
	}
}

// failure makes the Failure for reason. retryable says whether ep's retry_on
// covers it; dial, whether the request surely never reached the server.
func (c *Client) failure(ep *endpoint, cause breaker.Cause, reason string, retryable, dial bool) *fusebox.Failure {
	return c.judged(ep, ep.rules().fail(cause, nil, reason, retryable, dial))
}

// judged returns v's failure with its reason redacted (its Err, which may
// hold the URL, becomes the redacted reason too), and says so when ep's
// method kept it from being retried.
func (c *Client) judged(ep *endpoint, v verdict) *fusebox.Failure {
	f := v.failure
	if f == nil || f.Err == context.Canceled { // the bare sentinel: nothing to hide
		return f
	}
	f.Reason = shorten(c.red.String(f.Reason)) // hide first: a cut would leave part of a secret
	f.Err = errors.New(f.Reason)
	if v.unsafe {
		c.log.Info(ep.Method+" not retried: the request may have reached the server (set retry_unsafe to retry it)",
			"endpoint", ep.Name, "reason", f.Reason)
	}
	return f
}

// judgeStatus returns nil when ep expects the response's status, and
// otherwise the failure it is: the shared judge's, with ep's expect.status
// in the reason (which, for a 401 or 403, says to check the token).
func (c *Client) judgeStatus(ep *endpoint, resp *http.Response) *fusebox.Failure {
	code := resp.StatusCode
	if ep.statusOK(code) { // what judgeResponse says of it, without reading the clock
		return nil
	}
	v := judgeResponse(code, resp.Header, ep.rules(), c.clock.Now().Wall)
	if v.failure == nil {
		return nil
	}
	if reason := ep.refusedRedirect(resp, c.red.URL); reason != "" {
		return c.judged(ep, ep.rules().fail(CauseStatus, errors.New(reason), reason, false, false)) // following it is a config change, not a retry
	}
	if len(ep.Expect.Status) > 0 && code < 400 {
		v.failure.Reason = fmt.Sprintf("status %d not in %v", code, ep.Expect.Status)
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		// The reason reaches the call's one failure line: it says what to do.
		v.failure.Reason += " — check the token; not retried (Home Assistant bans IPs after repeated bad logins)"
	}
	f := c.judged(ep, v)
	if v.badRetryAfter != "" {
		c.log.Debug("ignoring unreadable Retry-After", "endpoint", ep.Name, "value", shorten(v.badRetryAfter))
	}
	return f
}

func (ep *endpoint) statusOK(code int) bool {
	if len(ep.Expect.Status) == 0 {
		return code >= 200 && code <= 299
	}
	return slices.Contains(ep.Expect.Status, code)
}

// readBody reads at most ep.MaxBody bytes; a longer body is a failure, and
// no more of it is read. It reads within a share of the Client's
// BodyMemory, which it returns holding the body's length, for the caller
// to give back.
func (c *Client) readBody(ctx context.Context, ep *endpoint, resp *http.Response) (_ []byte, _ *bodyShare, f *fusebox.Failure) {
	limit := ep.MaxBody
	tooLarge := func() *fusebox.Failure {
		return c.failure(ep, CauseBody, fmt.Sprintf("body larger than %d bytes", limit), false, false)
	}
	src, err := decoded(resp)
	if err != nil {
		return nil, nil, c.failure(ep, CauseBody, "reading the body: "+err.Error(), false, false)
	}
	if resp.ContentLength > limit {
		return nil, nil, tooLarge()
	}
	body, share, err := c.bodyMemory.read(src, resp.ContentLength, limit)
	if errors.Is(err, ErrNoBodyMemory) {
		f := c.failure(ep, CauseLocal, err.Error(), true, false)
		f.Local = true
		return nil, share, f
	}
	if err != nil {
		tf := classify(ctx, err)
		reason := "reading the body: " + tf.reason
		retryable := ep.RetryOn.Connect
		switch tf.kind {
		case kindCanceled:
			return nil, share, &fusebox.Failure{Err: context.Canceled, Reason: "canceled"}
		case kindTimeout:
			retryable, reason = ep.RetryOn.Timeout, "body not received in full"
		case kindLocal:
			retryable = true
		}
		cause := CauseBody
		if tf.kind == kindLocal {
			cause = CauseLocal
		}
		f := c.failure(ep, cause, reason, retryable, false)
		f.Local = tf.kind == kindLocal
		return nil, share, f
	}
	if int64(len(body)) > limit {
		return nil, share, tooLarge()
	}
	share.keep(int64(len(body)))
	return body, share, nil
}

// decoded returns the body of resp to read: decoded when it is gzip, as Go
// decodes it itself only when it asked for gzip, not when an endpoint sets
// Accept-Encoding of its own. What is judged, extracted, stored and answered
// is then the body itself, bounded by max_body after decoding (a small body
// that inflates past it is too large), and resp's header no longer says it
// is encoded. Another encoding is left as it came, and its header with it.
func decoded(resp *http.Response) (io.Reader, error) {
	ce := resp.Header["Content-Encoding"] // Values, for a name written canonically
	if len(ce) != 1 || !strings.EqualFold(strings.TrimSpace(ce[0]), "gzip") {
		return resp.Body, nil
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("it says Content-Encoding: gzip, but it is not: %w", err)
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	return zr, nil
}

// checkBody applies expect.jq and extract. Failing either is a failure worth
// retrying: a server that answered with an error page may be fine again soon.
func (c *Client) checkBody(ctx context.Context, ep *endpoint, body []byte) ([]byte, *fusebox.Failure) {
	if ep.expect == nil && ep.extract == nil {
		return body, nil
	}
	// The body is decoded once for both programs, under the share the
	// first of them runs with (see jqInput).
	j := &jqInput{mem: c.jqMemory, body: body}
	defer j.letGo()
	first := cmp.Or(ep.expect, ep.extract)
	if _, err := j.value(ctx, first.inProcessShare()); err != nil {
		return nil, c.failure(ep, CauseBody, err.Error(), true, false)
	}
	if ep.expect != nil {
		ok, err := evaluate(ctx, j, ep.expect, false, jqMaxCondition)
		switch {
		case err != nil:
			return nil, c.failure(ep, CauseCheck, fmt.Sprintf("expect.jq %q failed: %v", ep.Expect.JQ, err), true, false)
		case string(ok) != "true":
			return nil, c.failure(ep, CauseCheck, fmt.Sprintf("expect.jq %q was false", ep.Expect.JQ), true, false)
		}
	}
	if ep.extract == nil {
		return body, nil
	}
	out, err := evaluate(ctx, j, ep.extract, true, ep.MaxBody)
	if err != nil {
		return nil, c.failure(ep, CauseCheck, fmt.Sprintf("extract %q: %v", ep.Extract, err), true, false)
	}
	return out, nil
}

// get is h.Get(k) for a k written canonically, without canonicalizing it
// again on every request.
func get(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// idempotent reports whether repeating a request of this method is harmless
// (RFC 9110, 9.2.2).
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// drain reads a little of a body we do not want, so its connection can be
// reused, before it is closed.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
}

// shorten keeps reasons to a line a person reads.
func shorten(s string) string {
	const most = 300
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= most {
		return s
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
