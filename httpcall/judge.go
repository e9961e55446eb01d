package httpcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// rules are what judging an attempt needs to know besides its outcome. The
// Client takes them from an endpoint; the Transport uses DefaultRetryOn.
type rules struct {
	retryOn   RetryOn
	tripOn4xx bool // a 4xx other than 429 counts against the breaker
	// accept reports whether a status is the answer wanted; nil: any 2xx.
	accept func(code int) bool
	// repeatable is set when sending the request twice is harmless (an
	// idempotent method, retry_unsafe, an Idempotency-Key): only then is a
	// failure retried after the request may have reached the server.
	repeatable bool
	// sendOnce is set when the request cannot be sent again at all (its body
	// cannot be read a second time): no failure is retried.
	sendOnce bool
}

// verdict is the judgement of one attempt.
type verdict struct {
	// failure is nil for a success. Its Reason holds no URL but may hold
	// what the server or the error said: a Client redacts it.
	failure *fusebox.Failure
	// unsafe is set when the failure was worth retrying but is not retried
	// because the request may have reached the server and is not repeatable.
	unsafe bool
	// badRetryAfter is a Retry-After that could not be read; the computed
	// backoff applies.
	badRetryAfter string
}

// err returns the failure as an error, nil for a success.
func (v verdict) err() error {
	if v.failure == nil {
		return nil
	}
	return v.failure
}

// judgeResponse judges a response by its status and headers; now, from the
// circuits' clock, dates an HTTP-date Retry-After.
//
// A status r accepts is a success. 401 and 403 are never retried and count
// against the breaker only with tripOn4xx. 429 and 5xx are retried when
// retryOn covers them or lists the code; a Retry-After on a 429 or a 503
// replaces the backoff, and a 429's opens the circuit for that long, since
// other callers should wait too. Any other 4xx is the request's fault, not
// the server's: neither retried nor counted, unless tripOn4xx counts it or
// retryOn lists it (then it is both). Any other status is retried and
// counted.
func judgeResponse(code int, h http.Header, r rules, now time.Time) verdict {
	if r.accepts(code) {
		return verdict{}
	}
	reason := fmt.Sprintf("status %d %s", code, http.StatusText(code))
	listed := slices.Contains(r.retryOn.Codes, code)
	var v verdict
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		v = r.fail(CauseStatus4xx, errors.New(reason), reason, false, false)
		v.failure.Neutral = !r.tripOn4xx
	case code == http.StatusTooManyRequests:
		v = r.fail(CauseStatus429, errors.New(reason), reason, r.retryOn.TooManyRequests || listed, false)
		if d, ok := v.retryAfter(h, now); ok {
			v.failure.RetryAfter, v.failure.OpenFor = d, d
		}
	case code >= 500:
		v = r.fail(CauseStatus5xx, errors.New(reason), reason, r.retryOn.ServerErrors || listed, false)
		if code == http.StatusServiceUnavailable {
			v.failure.RetryAfter, _ = v.retryAfter(h, now)
		}
	case code >= 400:
		v = r.fail(CauseStatus4xx, errors.New(reason), reason, listed, false)
		v.failure.Neutral = !r.tripOn4xx && !listed
	default: // a status r does not accept
		v = r.fail(CauseStatus, errors.New(reason), reason, true, false)
	}
	return v
}

// judgeError judges a round trip made with ctx that failed with err before
// a response arrived. The failure wraps err, which may hold the URL.
func judgeError(ctx context.Context, err error, r rules) verdict {
	tf := classify(ctx, err)
	var retryable bool
	switch tf.kind {
	case kindCanceled:
		// Do sees its caller's cancellation itself.
		return verdict{failure: &fusebox.Failure{Err: context.Canceled, Reason: "canceled"}}
	case kindConnect:
		retryable = r.retryOn.Connect
	case kindTimeout:
		retryable = r.retryOn.Timeout
	case kindLocal:
		retryable = true // and not counted: the server is not to blame
	case kindTLS:
		// Not retried: a certificate does not fix itself.
	}
	v := r.fail(tf.cause, err, tf.reason, retryable, tf.dial)
	v.failure.Local = tf.kind == kindLocal
	return v
}

// fail makes the verdict of a failure. retryable says whether r's retryOn
// covers it; dial, whether the request surely never reached the server.
func (r rules) fail(cause breaker.Cause, err error, reason string, retryable, dial bool) verdict {
	v := verdict{failure: &fusebox.Failure{Err: err, Reason: reason, Permanent: !retryable || r.sendOnce, Cause: cause}}
	if retryable && !dial && !r.repeatable {
		v.failure.Permanent, v.unsafe = true, true
	}
	return v
}

// belowClientErrors accepts every status below 400 as the server's answer,
// as the Transport does: the http.Client above it follows redirects, and a
// 304 answers a conditional request.
func belowClientErrors(code int) bool { return code < 400 }

func (r rules) accepts(code int) bool {
	if r.accept == nil {
		return code >= 200 && code <= 299
	}
	return r.accept(code)
}

// retryAfter reads h's Retry-After; an unreadable one is noted in v and
// ignored.
func (v *verdict) retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	s := h.Get("Retry-After")
	if s == "" {
		return 0, false
	}
	d, ok := ParseRetryAfter(s, now)
	if !ok {
		v.badRetryAfter = s
	}
	return d, ok
}
