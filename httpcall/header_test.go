package httpcall

import (
	"net/http"
	"testing"
)

// get is http.Header.Get for the canonical names it is used with.
func TestGetIsHeaderGet(t *testing.T) {
	for _, h := range []http.Header{nil, {}, {"Accept-Encoding": {}}, {"Accept-Encoding": {"gzip", "br"}}, {"accept-encoding": {"gzip"}}} {
		for _, k := range []string{"Accept-Encoding", "Range", "Content-Encoding"} {
			if got, want := get(h, k), h.Get(k); got != want {
				t.Errorf("get(%v, %q) = %q, Header.Get %q", h, k, got, want)
			}
		}
	}
}
