package httpcall_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An endpoint that asks for gzip itself (Go decodes only what it asked for)
// gets its body decoded: extracted, answered and bounded as the body it is.
func TestAGzipBodyAskedForByTheEndpointIsDecoded(t *testing.T) {
	const doc = `{"main": {"temp": 21.5}, "pad": "` + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" + `"}`
	var sawAccept string
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		sawAccept = r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Write(gzipped(t, doc))
	})
	asksGzip := func(e *httpcall.Endpoint) { e.Headers = map[string]string{"Accept-Encoding": "gzip"} }
	h := newHarness(t, []*httpcall.Endpoint{
		endpoint("raw", u.URL, asksGzip),
		endpoint("temp", u.URL, asksGzip, func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource(".main.temp") }),
		endpoint("small", u.URL, asksGzip, func(e *httpcall.Endpoint) { e.MaxBody = int64(len(doc) - 1) }),
	}, nil)

	res := h.mustCall("raw")
	if sawAccept != "gzip" || string(res.Body) != doc || res.Header.Get("Content-Encoding") != "" {
		t.Errorf("raw: asked %q, body %q, Content-Encoding %q; want gzip asked, the decoded body and no encoding", sawAccept, res.Body, res.Header.Get("Content-Encoding"))
	}
	if res := h.mustCall("temp"); strings.TrimSpace(string(res.Body)) != "21.5" {
		t.Errorf("extract from a gzip body: %q, want 21.5", res.Body)
	}
	// The compressed body is far smaller than max_body; the decoded one is not.
	if _, err := h.call("small"); err == nil || !strings.Contains(err.Error(), "body larger than") {
		t.Errorf("a gzip body inflating past max_body: %v, want it too large", err)
	}
}

// A body that says gzip and is not is a failure that names it, and an
// encoding fusebox does not decode is left as it came, header and all.
func TestOtherEncodingsAreLeftAndFalseGzipFails(t *testing.T) {
	u := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", r.URL.Query().Get("ce"))
		w.Write([]byte("not what it says"))
	})
	h := newHarness(t, []*httpcall.Endpoint{
		endpoint("br", u.URL+"?ce=br"),
		endpoint("liar", u.URL+"?ce=gzip", func(e *httpcall.Endpoint) {
			e.Headers = map[string]string{"Accept-Encoding": "gzip"}
			e.Policy.Retry.Attempts = 1
		}),
	}, nil)
	if res := h.mustCall("br"); string(res.Body) != "not what it says" || res.Header.Get("Content-Encoding") != "br" {
		t.Errorf("br: body %q, Content-Encoding %q; want both as sent", res.Body, res.Header.Get("Content-Encoding"))
	}
	if _, err := h.call("liar"); err == nil || !strings.Contains(err.Error(), "Content-Encoding: gzip, but it is not") {
		t.Errorf("a false gzip: %v", err)
	}
}
