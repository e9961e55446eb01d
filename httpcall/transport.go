package httpcall

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/fusebox-hq/fusebox"
)

// Transport is an http.RoundTripper that gives any Go HTTP client persistent
// circuit breakers: each request runs under Circuits.Do on the circuit
// Name(req) names, so the breaker is asked before every attempt and every
// outcome is recorded.
//
// Responses and failures are judged as an endpoint with the default retry_on
// judges them (DefaultRetryOn, no trip_on_4xx), except that any status below
// 400 is accepted:
//   - A connection failure, a timeout, a 5xx or a 429 is a failed attempt: it
//     counts against the breaker and is retried per the circuit's policy. A
//     server's Retry-After on a 429 or a 503, its HTTP-date read against the
//     circuits' clock, replaces the backoff; a 429 with one also opens the
//     circuit for that long.
//   - Any other 4xx, 401 and 403 included, is the request's fault: a failed
//     attempt that is not retried and counts neither against the breaker nor
//     as a success.
//   - A response below 400 is a success: the server is up and answering
//     (redirects are for the http.Client to follow).
//   - A TLS failure counts and is not retried; a failure of this machine's
//     own network is retried and does not count.
//
// When the final attempt got a response, that response is returned with a
// nil error, whatever it was judged, unless the request's context was
// canceled; earlier ones are drained and closed. An open circuit fails at
// once with an error matching breaker.ErrOpen, sending nothing. Otherwise the
// error is the one Circuits.Do returned: an *fusebox.ExhaustedError wrapping
// the last attempt's error, or the request context's error.
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
	rules := rules{
		retryOn:    DefaultRetryOn(),
		accept:     belowClientErrors,
		repeatable: idempotent(req.Method) || req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != "",
		sendOnce:   hasBody && req.GetBody == nil,
	}
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
				return &fusebox.Failure{Err: err, Permanent: true}
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
			return judgeError(actx, err, rules).err()
		}
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: rcancel}
		last = resp
		return judgeResponse(resp.StatusCode, resp.Header, rules, t.Circuits.Clock().Now().Wall).err()
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
