package httpcall

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// Transport is an http.RoundTripper that gives any Go HTTP client persistent
// circuit breakers: each request runs under Circuits.Do on the circuit
// Name(req) names, so the breaker is asked before every attempt and every
// outcome is recorded.
//
// A connection failure, a timeout, a 5xx or a 429 is a failed attempt,
// retried per the circuit's policy (a server's Retry-After replaces the
// backoff; a 429 with one opens the circuit for that long). When the final
// attempt got a response, that response is returned; earlier ones are drained
// and closed. Any other response, 4xx included, is a success: the server is up
// and answering. An open circuit fails at once with an error matching
// fusebox.ErrOpen, sending nothing.
//
// The policy's attempt timeout covers waiting for the response headers;
// reading the body is bounded by the request's own context. A request with a
// body is retried only when it has GetBody (http.NewRequest sets it for
// in-memory bodies). A POST, PATCH or other non-idempotent request is retried
// only after a failure to connect, unless it carries an Idempotency-Key
// header.
//
// A Transport is safe for concurrent use once its fields are set.
type Transport struct {
	Circuits *fusebox.Circuits
	Base     http.RoundTripper // nil: http.DefaultTransport
	// Name returns the circuit of a request; nil: its host and port,
	// "127.0.0.1:8123" becoming "127.0.0.1_8123".
	Name func(*http.Request) string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	name := HostCircuit(req)
	if t.Name != nil {
		name = t.Name(req)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	bodyUsed := false
	retrySafe := idempotent(req.Method) || req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
	var last *http.Response // the latest attempt's response
	discardLast := func() {
		if last != nil {
			drain(last.Body)
			last.Body.Close()
			last = nil
		}
	}

	err := t.Circuits.Do(req.Context(), name, func(actx context.Context) error {
		discardLast()
		r := req
		if bodyUsed {
			body, err := req.GetBody()
			if err != nil {
				return fusebox.Permanent(err)
			}
			r = req.Clone(req.Context())
			r.Body = body
		}
		bodyUsed = hasBody
		// The attempt's context ends when Do's callback returns, but the
		// caller reads the body after that: tie the request to actx only
		// until the headers are in.
		rctx, rcancel := context.WithCancel(req.Context())
		stop := context.AfterFunc(actx, rcancel)
		resp, err := base.RoundTrip(r.WithContext(rctx))
		detached := stop()
		if err == nil && !detached {
			drain(resp.Body)
			resp.Body.Close()
			err = actx.Err()
		}
		if err != nil {
			rcancel()
			return t.failure(actx, err, hasBody && req.GetBody == nil, retrySafe)
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: rcancel}
		last = resp
		code := resp.StatusCode
		if code < 500 && code != http.StatusTooManyRequests {
			return nil
		}
		f := &fusebox.Failure{Err: errors.New(resp.Status), Reason: "status " + resp.Status}
		f.Permanent = !retrySafe || hasBody && req.GetBody == nil
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				f.RetryAfter = d
				if code == http.StatusTooManyRequests {
					f.OpenFor = d
				}
			}
		}
		return f
	})

	switch {
	case err == nil:
		return last, nil
	case last != nil && !errors.Is(err, context.Canceled):
		return last, nil // the final attempt got a response: let the caller read it
	}
	discardLast()
	if hasBody && !bodyUsed {
		req.Body.Close() // a RoundTripper closes the body, even when it sends nothing
	}
	return nil, err
}

func (t *Transport) failure(ctx context.Context, err error, cannotReplay, retrySafe bool) error {
	tf := classify(ctx, err)
	if tf.kind == kindCanceled {
		return &fusebox.Failure{Err: context.Canceled, Reason: "canceled"}
	}
	f := &fusebox.Failure{Err: err, Reason: tf.reason, Local: tf.kind == kindLocal}
	f.Permanent = tf.kind == kindTLS || cannotReplay || !retrySafe && !tf.dial
	return f
}

// cancelBody releases a request's context once its response body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// HostCircuit names a request's circuit after its host and port, with every
// character a circuit name cannot hold replaced by '_': "127.0.0.1:8123"
// becomes "127.0.0.1_8123".
func HostCircuit(req *http.Request) string {
	host := req.URL.Host
	if host == "" {
		host = req.Host
	}
	name := []byte(strings.ToLower(host))
	for i, c := range name {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			name[i] = '_'
		}
	}
	if len(name) > fusebox.MaxNameLen {
		name = name[:fusebox.MaxNameLen]
	}
	if s := string(name); s != "" && s != "." && s != ".." {
		return s
	}
	return "unknown-host"
}
