package httpcall

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"
)

// judged is what a verdict tells Do and the Client, Err left out.
type judged struct {
	Reason                    string
	Permanent, Neutral, Local bool
	RetryAfter, OpenFor       time.Duration
	Unsafe                    bool   // not retried only because of the method
	BadRetryAfter             string // logged by the Client
}

func summary(v verdict) *judged {
	f := v.failure
	if f == nil {
		return nil
	}
	return &judged{f.Reason, f.Permanent, f.Neutral, f.Local, f.RetryAfter, f.OpenFor, v.unsafe, v.badRetryAfter}
}

// The rules of a GET endpoint with the default retry_on, and variations.
func getRules(mods ...func(*rules)) rules {
	r := rules{retryOn: DefaultRetryOn(), repeatable: true}
	for _, m := range mods {
		m(&r)
	}
	return r
}

var (
	post        = func(r *rules) { r.repeatable = false }
	tripOn4xx   = func(r *rules) { r.tripOn4xx = true }
	asTransport = func(r *rules) { r.accept = belowClientErrors }
	sendOnce    = func(r *rules) { r.sendOnce = true }
	retryOnly   = func(on RetryOn) func(*rules) { return func(r *rules) { r.retryOn = on } }
)

func TestJudgeResponse(t *testing.T) {
	// now is the injected clock's reading, years from the real time, so a
	// date read against time.Now would give another wait.
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name       string
		code       int
		retryAfter string
		rules      rules
		want       *judged // nil: a success
	}{
		{"200 is a success", 200, "", getRules(), nil},
		{"204 is a success", 204, "", getRules(), nil},
		{"304 is not the 2xx an endpoint expects: retried and counted", 304, "", getRules(),
			&judged{Reason: "status 304 Not Modified"}},
		{"304 is an answer for the Transport", 304, "", getRules(asTransport), nil},
		{"302 is the Transport's http.Client's to follow", 302, "", getRules(asTransport), nil},
		{"a status the endpoint accepts is a success, even a 404", 404, "",
			getRules(func(r *rules) { r.accept = func(code int) bool { return code == 404 } }), nil},

		{"404 is the request's fault: neutral, not retried", 404, "", getRules(),
			&judged{Reason: "status 404 Not Found", Permanent: true, Neutral: true}},
		{"404 is the request's fault for the Transport too", 404, "", getRules(asTransport),
			&judged{Reason: "status 404 Not Found", Permanent: true, Neutral: true}},
		{"404 with trip_on_4xx counts, still not retried", 404, "", getRules(tripOn4xx),
			&judged{Reason: "status 404 Not Found", Permanent: true}},
		{"409 listed in retry_on codes is retried and counted", 409, "", getRules(retryOnly(RetryOn{Codes: []int{409}})),
			&judged{Reason: "status 409 Conflict"}},
		{"401 is a bad token: neutral, not retried", 401, "", getRules(),
			&judged{Reason: "status 401 Unauthorized", Permanent: true, Neutral: true}},
		{"401 is never retried, even listed in retry_on codes", 401, "", getRules(retryOnly(RetryOn{Codes: []int{401}})),
			&judged{Reason: "status 401 Unauthorized", Permanent: true, Neutral: true}},
		{"403 with trip_on_4xx counts, still not retried", 403, "", getRules(tripOn4xx),
			&judged{Reason: "status 403 Forbidden", Permanent: true}},

		{"429 is retried and counted", 429, "", getRules(),
			&judged{Reason: "status 429 Too Many Requests"}},
		{"429 with Retry-After 60 waits 1m and opens the circuit for 1m", 429, "60", getRules(),
			&judged{Reason: "status 429 Too Many Requests", RetryAfter: time.Minute, OpenFor: time.Minute}},
		{"429 with an HTTP-date Retry-After is read against the injected clock", 429, date(90 * time.Second), getRules(),
			&judged{Reason: "status 429 Too Many Requests", RetryAfter: 90 * time.Second, OpenFor: 90 * time.Second}},
		{"429 with a Retry-After date already past retries after the backoff", 429, date(-time.Hour), getRules(),
			&judged{Reason: "status 429 Too Many Requests"}},
		{"429 left out of retry_on is counted, not retried", 429, "", getRules(retryOnly(RetryOn{Connect: true})),
			&judged{Reason: "status 429 Too Many Requests", Permanent: true}},

		{"500 is retried and counted", 500, "", getRules(),
			&judged{Reason: "status 500 Internal Server Error"}},
		{"500 ignores Retry-After", 500, "7", getRules(),
			&judged{Reason: "status 500 Internal Server Error"}},
		{"503 with Retry-After 7 waits 7s, the circuit stays closed", 503, "7", getRules(),
			&judged{Reason: "status 503 Service Unavailable", RetryAfter: 7 * time.Second}},
		{"503 with an HTTP-date Retry-After is read against the injected clock", 503, date(7 * time.Second), getRules(),
			&judged{Reason: "status 503 Service Unavailable", RetryAfter: 7 * time.Second}},
		{"503 with an unreadable Retry-After keeps the backoff", 503, "soon", getRules(),
			&judged{Reason: "status 503 Service Unavailable", BadRetryAfter: "soon"}},
		{"503 to a POST is not retried: it may have reached the server", 503, "", getRules(post),
			&judged{Reason: "status 503 Service Unavailable", Permanent: true, Unsafe: true}},
		{"503 to a request whose body cannot be sent again is not retried", 503, "", getRules(sendOnce),
			&judged{Reason: "status 503 Service Unavailable", Permanent: true}},
		{"5xx left out of retry_on is counted, not retried", 502, "", getRules(retryOnly(RetryOn{Timeout: true})),
			&judged{Reason: "status 502 Bad Gateway", Permanent: true}},
		{"5xx listed in retry_on codes is retried", 502, "", getRules(retryOnly(RetryOn{Codes: []int{502}})),
			&judged{Reason: "status 502 Bad Gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.retryAfter != "" {
				h.Set("Retry-After", tt.retryAfter)
			}
			v := judgeResponse(tt.code, h, tt.rules, now)
			if got := summary(v); !same(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if v.failure != nil && v.failure.Err == nil {
				t.Error("the failure has no Err")
			}
		})
	}
}

func TestJudgeError(t *testing.T) {
	refused := roundTrip(t, context.Background(), "http://"+closedAddr(t))
	tests := []struct {
		name  string
		ctx   context.Context
		err   error
		rules rules
		want  *judged
	}{
		{"connection refused is retried and counted", context.Background(), refused, getRules(),
			&judged{Reason: "connection refused"}},
		{"connection refused to a POST is retried: it never reached the server", context.Background(), refused, getRules(post),
			&judged{Reason: "connection refused"}},
		{"connection refused left out of retry_on is counted, not retried", context.Background(), refused, getRules(retryOnly(RetryOn{Timeout: true})),
			&judged{Reason: "connection refused", Permanent: true}},
		{"connection reset of a POST is not retried: it may have reached the server", context.Background(), resetByServer(t), getRules(post),
			&judged{Reason: "connection reset", Permanent: true, Unsafe: true}},
		{"no response in time is retried and counted", pastDeadline(), noResponse(t), getRules(),
			&judged{Reason: "no response"}},
		{"no response left out of retry_on is counted, not retried", pastDeadline(), noResponse(t), getRules(retryOnly(RetryOn{Connect: true})),
			&judged{Reason: "no response", Permanent: true}},
		{"an unknown certificate is counted and never retried", context.Background(), unknownCertificate(t), getRules(),
			&judged{Reason: "TLS: tls: failed to verify certificate: x509: certificate signed by unknown authority", Permanent: true}},
		// This machine's network cannot be taken down for a test: the error
		// is the one a dial returns then.
		{"network unreachable is this machine's: retried, not counted", context.Background(),
			&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, getRules(),
			&judged{Reason: "local network: network unreachable", Local: true}},
		{"DNS name not found is retried and counted", context.Background(),
			&net.DNSError{Err: "no such host", Name: "ha.fusebox.test", IsNotFound: true}, getRules(),
			&judged{Reason: "DNS: no such host ha.fusebox.test"}},
		{"refused to a request whose body cannot be sent again is not retried", context.Background(), refused, getRules(sendOnce),
			&judged{Reason: "connection refused", Permanent: true}},
		{"the caller gave up: canceled, for Do to see", canceled(), roundTrip(t, canceled(), "http://"+closedAddr(t)), getRules(),
			&judged{Reason: "canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeError(tt.ctx, tt.err, tt.rules)
			if got := summary(v); !same(got, tt.want) {
				t.Errorf("got %+v, want %+v (from %v)", got, tt.want, tt.err)
			}
			if f := v.failure; f != nil && f.Reason != "canceled" && !errors.Is(f, tt.err) {
				t.Errorf("the failure does not wrap %v: the Transport's callers could not match it", tt.err)
			}
		})
	}
}

func same(a, b *judged) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// roundTrip makes a GET to url with ctx and returns its error, nil if it
// got a response.
func roundTrip(t *testing.T, ctx context.Context, url string) error {
	t.Helper()
	return roundTripWith(t, ctx, &http.Transport{}, url)
}

func roundTripWith(t *testing.T, ctx context.Context, tr *http.Transport, url string) error {
	t.Helper()
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s got a response", url)
	}
	return err
}

// closedAddr returns the address of a port that refuses connections.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// resetByServer returns the error of a request whose connection the server
// reset after reading it.
func resetByServer(t *testing.T) error {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
		conn.Close()
	}))
	defer s.Close()
	return roundTrip(t, context.Background(), s.URL)
}

// noResponse returns the error of a request to a server that never answers,
// made with a context that expires after 20ms.
func noResponse(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return roundTrip(t, ctx, "http://"+l.Addr().String())
}

// unknownCertificate returns the error of a request to a TLS server whose
// certificate no trusted authority signed.
func unknownCertificate(t *testing.T) error {
	t.Helper()
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake the client refuses
	s.StartTLS()
	defer s.Close()
	return roundTrip(t, context.Background(), s.URL)
}

// pastDeadline returns a context whose deadline has passed.
func pastDeadline() context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	cancel()
	return ctx
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
