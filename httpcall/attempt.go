package httpcall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fusebox-hq/fusebox"
)

// answer is what a successful attempt got.
type answer struct {
	status int
	body   []byte // the extraction, or the raw body
}

// attempt makes one request to ep and judges what came back. Its error is a
// *fusebox.Failure telling Do whether to retry and whether the failure counts
// against the breaker; its reason is redacted.
func (c *Client) attempt(ctx context.Context, ep *endpoint) (answer, error) {
	req, err := ep.request(ctx)
	if err != nil {
		return answer{}, c.failure(ep, "cannot build the request: "+innermost(err), false, false)
	}
	c.log.Debug("request", "endpoint", ep.Name, "method", ep.Method, "url", ep.safeURL)
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, c.transportFailure(ctx, ep, err)
	}
	defer resp.Body.Close()
	if f := c.judgeStatus(ep, resp); f != nil {
		drain(resp.Body)
		return answer{}, f
	}
	body, f := c.readBody(ctx, ep, resp)
	if f != nil {
		return answer{}, f
	}
	out, f := c.checkBody(ctx, ep, body)
	if f != nil {
		return answer{}, f
	}
	return answer{status: resp.StatusCode, body: out}, nil
}

func (ep *endpoint) request(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if ep.Body != "" {
		body = strings.NewReader(ep.Body)
	}
	req, err := http.NewRequestWithContext(ctx, ep.Method, ep.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "fusebox")
	for k, v := range ep.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req, nil
}

// failure makes the Failure for reason. retryable says whether ep's retry_on
// covers it; dial, whether the request surely never reached the server.
func (c *Client) failure(ep *endpoint, reason string, retryable, dial bool) *fusebox.Failure {
	reason = c.red.String(shorten(reason))
	f := &fusebox.Failure{Err: errors.New(reason), Reason: reason, Permanent: !retryable}
	if retryable && !dial && !ep.RetryUnsafe && !idempotent(ep.Method) {
		f.Permanent = true
		c.log.Info(ep.Method+" not retried: the request may have reached the server (set retry_unsafe to retry it)",
			"endpoint", ep.Name, "reason", reason)
	}
	return f
}

func (c *Client) transportFailure(ctx context.Context, ep *endpoint, err error) error {
	tf := classify(ctx, err)
	var retryable bool
	switch tf.kind {
	case kindCanceled:
		// Do sees its caller's cancellation itself; err holds the URL.
		return &fusebox.Failure{Err: context.Canceled, Reason: "canceled"}
	case kindConnect:
		retryable = ep.RetryOn.Connect
	case kindTimeout:
		retryable = ep.RetryOn.Timeout
	case kindLocal:
		retryable = true
	}
	f := c.failure(ep, tf.reason, retryable, tf.dial)
	f.Local = tf.kind == kindLocal
	return f
}

// judgeStatus returns nil when ep expects the response's status, and
// otherwise the failure it is.
func (c *Client) judgeStatus(ep *endpoint, resp *http.Response) *fusebox.Failure {
	code := resp.StatusCode
	if ep.statusOK(code) {
		return nil
	}
	reason := fmt.Sprintf("status %d %s", code, http.StatusText(code))
	if len(ep.Expect.Status) > 0 && code < 400 {
		reason = fmt.Sprintf("status %d not in %v", code, ep.Expect.Status)
	}
	listed := slices.Contains(ep.RetryOn.Codes, code)
	var f *fusebox.Failure
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		f = c.failure(ep, reason, false, false)
		f.Neutral = !ep.TripOn4xx
		c.log.Error(fmt.Sprintf("%s: %d %s — check the token; not retried (Home Assistant bans IPs after repeated bad logins)",
			ep.Name, code, http.StatusText(code)), "endpoint", ep.Name, "url", ep.safeURL)
	case code == http.StatusTooManyRequests:
		f = c.failure(ep, reason, ep.RetryOn.TooManyRequests || listed, false)
		if d, ok := c.retryAfter(ep, resp); ok {
			f.RetryAfter, f.OpenFor = d, d // other callers should wait too
		}
	case code >= 500:
		f = c.failure(ep, reason, ep.RetryOn.ServerErrors || listed, false)
		if code == http.StatusServiceUnavailable {
			f.RetryAfter, _ = c.retryAfter(ep, resp)
		}
	case code >= 400:
		// The request, not the endpoint, is wrong: retrying will not help
		// and the endpoint is not to blame, unless the config says so.
		f = c.failure(ep, reason, listed, false)
		f.Neutral = !ep.TripOn4xx && !listed
	default: // a status the expectation does not accept
		f = c.failure(ep, reason, true, false)
	}
	return f
}

func (ep *endpoint) statusOK(code int) bool {
	if len(ep.Expect.Status) == 0 {
		return code >= 200 && code <= 299
	}
	return slices.Contains(ep.Expect.Status, code)
}

// retryAfter reads the response's Retry-After; an unreadable one is ignored,
// and the computed backoff applies.
func (c *Client) retryAfter(ep *endpoint, resp *http.Response) (d time.Duration, ok bool) {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	d, ok = ParseRetryAfter(v, c.clock.Now().Wall)
	if !ok {
		c.log.Debug("ignoring unreadable Retry-After", "endpoint", ep.Name, "value", shorten(v))
	}
	return d, ok
}

// readBody reads at most ep.MaxBody bytes; a longer body is a failure, and
// no more of it is read.
func (c *Client) readBody(ctx context.Context, ep *endpoint, resp *http.Response) ([]byte, *fusebox.Failure) {
	limit := ep.MaxBody
	tooLarge := func() *fusebox.Failure {
		return c.failure(ep, fmt.Sprintf("body larger than %d bytes", limit), false, false)
	}
	if resp.ContentLength > limit {
		return nil, tooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, min(limit, math.MaxInt64-1)+1))
	if err != nil {
		tf := classify(ctx, err)
		reason := "reading the body: " + tf.reason
		retryable := ep.RetryOn.Connect
		switch tf.kind {
		case kindCanceled:
			return nil, &fusebox.Failure{Err: context.Canceled, Reason: "canceled"}
		case kindTimeout:
			retryable, reason = ep.RetryOn.Timeout, "body not received in full"
		case kindLocal:
			retryable = true
		}
		f := c.failure(ep, reason, retryable, false)
		f.Local = tf.kind == kindLocal
		return nil, f
	}
	if int64(len(body)) > limit {
		return nil, tooLarge()
	}
	return body, nil
}

// checkBody applies expect.jq and extract. Failing either is a failure worth
// retrying: a server that answered with an error page may be fine again soon.
func (c *Client) checkBody(ctx context.Context, ep *endpoint, body []byte) ([]byte, *fusebox.Failure) {
	if ep.expect == nil && ep.extract == nil {
		return body, nil
	}
	v, err := decodeJSON(body)
	if err != nil {
		return nil, c.failure(ep, err.Error(), true, false)
	}
	if ep.expect != nil {
		ok, err := condition(ctx, ep.expect, v)
		switch {
		case err != nil:
			return nil, c.failure(ep, fmt.Sprintf("expect.jq %q failed: %v", ep.Expect.JQ, err), true, false)
		case !ok:
			return nil, c.failure(ep, fmt.Sprintf("expect.jq %q was false", ep.Expect.JQ), true, false)
		}
	}
	if ep.extract == nil {
		return body, nil
	}
	out, err := extract(ctx, ep.extract, v, ep.MaxBody)
	if err != nil {
		return nil, c.failure(ep, fmt.Sprintf("extract %q: %v", ep.Extract, err), true, false)
	}
	return out, nil
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
