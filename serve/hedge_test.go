package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

func TestHedgedChainThroughTheDaemon(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	var once sync.Once
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		<-r.Context().Done() // answers no one: only a hedge can
		close(cancelled)
	}))
	t.Cleanup(primary.Close)
	secondary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-arrived // the primary's request is in flight
		w.Write([]byte("secondary"))
	}))
	t.Cleanup(secondary.Close)
	patient := func(e *httpcall.Endpoint) {
		e.Policy.Retry.Timeout = time.Hour
		e.Policy.Retry.Deadline = 2 * time.Hour
	}
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{endpoint("primary", primary.URL, patient), endpoint("secondary", secondary.URL, patient)},
		Chains:    []*httpcall.Chain{{Name: "c", Endpoints: []string{"primary", "secondary"}, Hedge: time.Millisecond}},
	}, serve.Options{})

	r := d.get(t, "/call/c")
	if r.code != 200 || r.body != "secondary" || r.header.Get(serve.HeaderSource) != "secondary" || r.header.Get(serve.HeaderAttempts) != "2" {
		t.Fatalf("got %d %q from %s after %s attempts; want the hedge's answer after 2", r.code, r.body,
			r.header.Get(serve.HeaderSource), r.header.Get(serve.HeaderAttempts))
	}
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("timed out after 1m waiting for the primary's server to see its request cancelled")
	}
	st, err := d.store.Load(context.Background(), "primary")
	if err != nil {
		t.Fatal(err)
	}
	counts, err := d.store.Counts(context.Background(), "primary")
	if err != nil {
		t.Fatal(err)
	}
	if st.ConsecutiveFailures != 0 || len(st.Probes) != 0 || counts.Failures != 0 {
		t.Errorf("primary after its request was cancelled: %+v, %+v; want no failure and no lease", st, counts)
	}
}
