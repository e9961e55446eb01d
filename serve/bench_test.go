package serve_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// BenchmarkCallThroughTheDaemon measures one /call/NAME through a real
// socket, file store and upstream; docs/benchmarks.md has the side-by-side
// with nginx (bench -run proxy).
func BenchmarkCallThroughTheDaemon(b *testing.B) {
	u := newUpstream(b, "u")
	d := start(b, config.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) { e.PassQuery = true })}}, serve.Options{})
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
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
}
