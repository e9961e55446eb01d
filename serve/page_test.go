package serve_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

func TestStatusPageIsServedFromTheBinaryWithATightPolicy(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{Token: "tok"})
	for path, ctype := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/style.css": "text/css"} {
		r := d.get(t, path) // no token: the page's own files hold no data
		if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), ctype) {
			t.Errorf("GET %s: %d %q", path, r.code, r.header.Get("Content-Type"))
		}
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
	}
	if r := d.get(t, "/"); strings.Contains(r.body, "http://") || strings.Contains(r.body, "https://") {
		t.Error("the page names another origin")
	}
	// Its data needs the token.
	if r := d.get(t, "/api/outages"); r.code != http.StatusUnauthorized {
		t.Errorf("/api/outages without the token: %d", r.code)
	}
	r := d.get(t, "/api/outages", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") })
	if r.code != 200 || !strings.Contains(r.body, `"circuits"`) {
		t.Errorf("/api/outages: %d %s", r.code, r.body)
	}
	if r := d.do(t, "POST", "/"); r.code != http.StatusUnauthorized && r.code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d", r.code)
	}
}
