package serve_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// stuckStore is a store whose writes are held until release is closed,
// whatever their context says: a store stuck under the call (a lock never
// given up, a disk that stalls).
type stuckStore struct {
	fusebox.Admin
	release chan struct{}
}

func (s *stuckStore) hold() { <-s.release }

func (s *stuckStore) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	s.hold()
	return s.Admin.Update(ctx, name, fn)
}

func (s *stuckStore) Count(ctx context.Context, name string, c fusebox.Counts) error {
	s.hold()
	return s.Admin.Count(ctx, name, c)
}

// The daemon answers within the caller's wait whatever the call, or the
// store beneath it, is doing: with a store whose writes never end, a GET
// (shared), a POST and a failing call each get a 503 with Retry-After
// before the store lets go, and the daemon goes on.
func TestTheAnswerComesWithinTheWaitWhenTheStoreIsStuck(t *testing.T) {
	u := newUpstream(t, "u")
	fs, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() }) // after the daemon's, which waits for the calls going on
	stuck := &stuckStore{Admin: fs, release: make(chan struct{})}
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{
		endpoint("u", u.URL),
		endpoint("hook", u.URL, func(e *httpcall.Endpoint) { e.Method = "POST" }),
		endpoint("down", "http://127.0.0.1:1/"),
	}}, serve.Options{Store: stuck})
	defer close(stuck.release) // after the calls: each answer came while the store held on
	for _, c := range []struct{ method, name string }{{"GET", "u"}, {"POST", "hook"}, {"GET", "down"}} {
		start := time.Now()
		r := d.do(t, c.method, "/call/"+c.name, func(r *http.Request) { r.Header.Set(serve.HeaderWait, "2") })
		took := time.Since(start)
		if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "no answer within the caller's wait of 2s") {
			t.Errorf("%s %s with the store stuck: %d (Retry-After %q) %s; want a 503 saying the wait ran out", c.method, c.name, r.code, r.header.Get("Retry-After"), r.body)
		}
		t.Logf("%s %s with the store stuck: %d after %s", c.method, c.name, r.code, took.Round(time.Millisecond))
	}
}
