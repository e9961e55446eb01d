package httpcall_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/mem"
)

// BenchmarkHedgedChainWithASlowPrimary measures what a hedge buys a chain
// whose first endpoint is slow: the primary answers after 2 s, the
// secondary at once. Each round calls the same two endpoints once through
// a chain with hedge: 100ms and once through the same chain without,
// alternating which goes first, and reports the mean answer time of each
// and their ratio:
//
//	go test -run '^$' -bench HedgedChainWithASlowPrimary -benchtime 5x ./httpcall/
func BenchmarkHedgedChainWithASlowPrimary(b *testing.B) {
	const slow, hedge = 2 * time.Second, 100 * time.Millisecond
	primary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(slow)
		defer t.Stop()
		select {
		case <-t.C:
			_, _ = w.Write([]byte("primary"))
		case <-r.Context().Done(): // a hedge's answer came first
		}
	}))
	defer primary.Close()
	secondary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("secondary"))
	}))
	defer secondary.Close()
	lenient := func(e *httpcall.Endpoint) {
		e.Policy.Retry.Timeout = 10 * time.Second
		e.Policy.Retry.Deadline = 30 * time.Second
	}
	c, err := httpcall.New(mem.New(),
		[]*httpcall.Endpoint{endpoint("primary", primary.URL, lenient), endpoint("secondary", secondary.URL, lenient)},
		[]*httpcall.Chain{
			{Name: "hedged", Endpoints: []string{"primary", "secondary"}, Hedge: hedge},
			{Name: "plain", Endpoints: []string{"primary", "secondary"}},
		})
	if err != nil {
		b.Fatal(err)
	}
	defer c.CloseIdleConnections()
	call := func(name, want string) time.Duration {
		start := time.Now()
		res, err := c.Call(context.Background(), name, httpcall.CallOptions{})
		took := time.Since(start)
		if err != nil || res.Source != want {
			b.Fatalf("%s: %v, %+v; want %s's answer", name, err, res, want)
		}
		return took
	}
	var hedged, plain time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			hedged += call("hedged", "secondary")
			plain += call("plain", "primary")
		} else {
			plain += call("plain", "primary")
			hedged += call("hedged", "secondary")
		}
	}
	n := float64(b.N)
	b.ReportMetric(hedged.Seconds()*1000/n, "hedged-ms/call")
	b.ReportMetric(plain.Seconds()*1000/n, "unhedged-ms/call")
	b.ReportMetric(float64(hedged)/float64(plain), "hedged/unhedged")
}
