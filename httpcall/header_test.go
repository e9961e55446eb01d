package httpcall

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
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

// An upstream's header is bounded by MaxResponseHeader, on the transport a
// Client makes and the daemon's: one of 100 KiB (Go's own bound is 10 MB an
// answer, held whole before any body budget sees it) fails the attempt
// unread, one of 32 KiB is answered.
func TestAnUpstreamsHeaderIsBounded(t *testing.T) {
	for _, c := range []struct {
		size     int
		answered bool
	}{{32 << 10, true}, {100 << 10, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Junk", strings.Repeat("j", c.size))
			w.Write([]byte("ok"))
		}))
		client, err := New(mem.New(), []*Endpoint{{Name: "u", URL: srv.URL, Method: "GET", RetryOn: DefaultRetryOn(),
			Policy: fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1}}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Call(context.Background(), "u", CallOptions{})
		srv.Close()
		switch {
		case c.answered && (err != nil || string(res.Body) != "ok"):
			t.Errorf("a header of %d KiB: %v; want it answered", c.size>>10, err)
		case !c.answered && (err == nil || !strings.Contains(err.Error(), "headers exceeded")):
			t.Errorf("a header of %d KiB: %v; want the attempt failed, the header past the bound", c.size>>10, err)
		}
	}
}
