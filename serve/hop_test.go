package serve_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// An upstream's connection and framing headers stay with it: the answer
// has none of them, whatever else it passes on.
func TestAnswerDropsTheUpstreamsHopHeaders(t *testing.T) {
	for _, k := range serve.HopHeaders {
		if http.CanonicalHeaderKey(k) != k {
			t.Errorf("hop header %q is not canonical: deleting it would miss %q", k, http.CanonicalHeaderKey(k))
		}
	}
	body := []byte("ok")
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		h := http.Header{"X-Kept": {"yes"}}
		for _, k := range serve.HopHeaders {
			h.Set(k, "upstream's")
		}
		return &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: int64(len(body)),
			Header: h, Body: io.NopCloser(bytes.NewReader(body))}, nil
	})
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", "http://upstream.test/")}},
		serve.Options{ClientOptions: []httpcall.Option{httpcall.WithTransport(up)}})
	r := httptest.NewRequest(http.MethodGet, "/call/u", nil)
	r.Host = d.addr
	w := httptest.NewRecorder()
	d.Handler().ServeHTTP(w, r)
	got := w.Result().Header
	if w.Code != 200 || got.Get("X-Kept") != "yes" {
		t.Fatalf("answer %d %v", w.Code, got)
	}
	for _, k := range serve.HopHeaders {
		want := ""
		if k == "Content-Length" {
			want = "2" // the daemon's own, of the body it writes
		}
		if v := got.Get(k); v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
}
