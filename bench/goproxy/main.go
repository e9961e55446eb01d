// Command goproxy is the proxy benchmark's Go baseline: net/http's
// httputil.ReverseProxy (the engine Caddy and Traefik run on) doing the
// daemon's forwarding and nothing else, on net/http's server and transport
// configured as the daemon's are (64 idle upstream connections, the same
// header, read, write and idle timeouts), so that the benchmark shows what
// fusebox's own work costs on top of Go's standard HTTP stack.
//
//	goproxy UPSTREAM-URL
//
// It listens on a free loopback port, prints "addr=HOST:PORT" on stderr, and
// sends every request to UPSTREAM-URL with the request's query.
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goproxy UPSTREAM-URL")
		os.Exit(2)
	}
	upstream, err := url.Parse(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
	proxy := &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path, r.Out.URL.RawPath = upstream.Scheme, upstream.Host, upstream.Path, ""
			r.Out.Host = ""
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "addr=%s\n", ln.Addr())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 35 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
