package serve_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// An endpoint that asks its upstream for gzip is answered with the body
// decoded and no Content-Encoding; an encoding fusebox leaves as it came
// keeps its header, so the caller can still read the body.
func TestContentEncodingThroughTheDaemon(t *testing.T) {
	const doc = `{"temp": 21.5}`
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("ce") == "br" {
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte("brotli bytes"))
			return
		}
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(doc))
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(b.Bytes())
	})
	u := httptest.NewServer(up)
	t.Cleanup(u.Close)
	asksGzip := func(e *httpcall.Endpoint) { e.Headers = map[string]string{"Accept-Encoding": "gzip"} }
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("gz", u.URL, asksGzip),
		endpoint("br", u.URL+"?ce=br"),
	}}, serve.Options{})
	// The caller names its own Accept-Encoding, so its client decodes
	// nothing: what it reads is what the daemon wrote.
	own := func(r *http.Request) { r.Header.Set("Accept-Encoding", "gzip, br") }
	if r := d.get(t, "/call/gz", own); r.code != 200 || r.body != doc || r.header.Get("Content-Encoding") != "" {
		t.Errorf("gzip upstream: %d %q, Content-Encoding %q; want 200, the JSON and none", r.code, r.body, r.header.Get("Content-Encoding"))
	}
	if r := d.get(t, "/call/br", own); r.code != 200 || r.body != "brotli bytes" || r.header.Get("Content-Encoding") != "br" {
		t.Errorf("br upstream: %d %q, Content-Encoding %q; want the body and its br header", r.code, r.body, r.header.Get("Content-Encoding"))
	}
}
