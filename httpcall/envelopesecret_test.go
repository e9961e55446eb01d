package httpcall_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// canary is a configured secret (as from ${file:} or !secret), long enough
// that a cut or a preview of it shows a part.
const canary = "CANARY-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c1e"

// leaks returns the longest part of canary, of 6 bytes or more, found in s.
func leaks(s string) string {
	for n := len(canary); n >= 6; n-- {
		for i := 0; i+n <= len(canary); i++ {
			if strings.Contains(s, canary[i:i+n]) {
				return canary[i : i+n]
			}
		}
	}
	return ""
}

// TestEnvelopeErrorsNeverCarryASecret: whatever an upstream answers — an
// error quoting the configured key, cut at the reason's length limit, or
// shown by jq in a preview, a redirect naming it — the --json envelope's
// errors carry no part of a configured secret. (Its body is the upstream's
// answer, passed as is.)
func TestEnvelopeErrorsNeverCarryASecret(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		mod     func(*httpcall.Endpoint)
	}{
		{"an error message quoting the key, cut at the reason's length",
			status(200, fmt.Sprintf(`{"msg":"%s invalid key %s"}`, strings.Repeat("x", 250), canary)),
			func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource("error(.msg)") }},
		{"a jq type error previewing the key",
			status(200, fmt.Sprintf(`{"a":"%s"}`, canary)),
			func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource(".a.b") }},
		{"a jq type error previewing the key in an object",
			status(200, fmt.Sprintf(`{"a":{"key":"%s"}}`, canary)),
			func(e *httpcall.Endpoint) { e.Extract = httpcall.JQSource(".a[0]") }},
		{"expect.jq failing on the key",
			status(200, fmt.Sprintf(`{"a":"%s"}`, canary)),
			func(e *httpcall.Endpoint) { e.Expect.JQ = httpcall.JQSource(".a | tonumber") }},
		{"a redirect to a path holding the key",
			func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://elsewhere.test/"+strings.Repeat("p", 250)+"/"+canary+"/x", http.StatusFound)
			}, nil},
		{"a 500 whose body holds the key", status(500, canary), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, tt.handler)
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL+"/?q="+canary, func(e *httpcall.Endpoint) {
				e.Secrets = []string{canary}
				e.Headers = map[string]string{"X-Key": canary}
				e.Policy.Retry.Attempts = 1
				if tt.mod != nil {
					tt.mod(e)
				}
			})}, nil)
			res, _ := h.mustFail("svc")
			env, err := res.Envelope()
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) == 0 {
				t.Fatalf("no errors in %s", env)
			}
			if part := leaks(string(env)); part != "" {
				t.Errorf("the envelope carries %q of the secret:\n%s", part, env)
			}
			if part := leaks(h.logs.String()); part != "" {
				t.Errorf("the log carries %q of the secret:\n%s", part, h.logs.String())
			}
		})
	}
}
