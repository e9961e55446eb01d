package serve_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// BenchmarkCallThroughTheDaemon measures one /call/NAME through a real
// socket, file store and upstream; docs/benchmarks.md has the side-by-side
// with nginx (bench -run proxy). Besides the time a call takes it reports
// the CPU time (user and system) a call costs the process: the client's,
// the daemon's and the upstream's together, which a busy machine skews less
// than the wall time.
func BenchmarkCallThroughTheDaemon(b *testing.B) {
	u := newUpstream(b, "u")
	d := start(b, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) { e.PassQuery = true })}}, serve.Options{})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	cpu0 := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			resp, err := c.Get("http://" + d.addr + "/call/u?n=" + strconv.Itoa(i))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the user and system time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDaemonOwnWork is the daemon's own work on a call, without
// sockets: the handler (guard, mux, circuit, count, answer) in front of an
// upstream that is a RoundTripper answering from memory. It is what the
// daemon costs beyond Go's HTTP server and client, which
// BenchmarkCallThroughTheDaemon and the bench's proxy scenario include. A
// circuit that has only succeeded has no state file.
func BenchmarkDaemonOwnWork(b *testing.B) { daemonOwnWork(b, false) }

// BenchmarkDaemonOwnWorkTripped is the same on a circuit tripped by hand:
// every call reads its state file (through the store's state cache) and is
// answered 503 without an upstream request (docs/benchmarks.md, "Speed
// mechanisms against the plain path").
func BenchmarkDaemonOwnWorkTripped(b *testing.B) { daemonOwnWork(b, true) }

func daemonOwnWork(b *testing.B, tripped bool) {
	body := []byte(`{"temp":21.5,"unit":"C"}`)
	up := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: int64(len(body)),
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
	})
	d := start(b, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", "http://upstream.test/", func(e *httpcall.Endpoint) { e.PassQuery = true })}},
		serve.Options{ClientOptions: []httpcall.Option{httpcall.WithTransport(up)}})
	want := http.StatusOK
	if tripped {
		if _, err := fusebox.New(d.store).Trip(context.Background(), "u", 24*time.Hour, ""); err != nil {
			b.Fatal(err)
		}
		want = http.StatusServiceUnavailable
	}
	h := d.Handler()
	b.ReportAllocs()
	cpu0 := processCPU(b)
	i := 0
	for b.Loop() {
		i++
		r := httptest.NewRequest(http.MethodGet, "/call/u?n="+strconv.Itoa(i), nil)
		r.Host = d.addr
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
