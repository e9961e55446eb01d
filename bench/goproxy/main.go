// Command goproxy is the proxy benchmark's Go baseline: a reverse proxy made
// of Go's net/http server and client and nothing else, configured as the
// daemon is (64 idle upstream connections, a header timeout), so that the
// benchmark shows what Go's standard HTTP stack costs on its own.
//
//	goproxy UPSTREAM-URL
//
// It listens on a free loopback port, prints "addr=HOST:PORT" on stderr, and
// sends every request to UPSTREAM-URL with the request's query.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goproxy UPSTREAM-URL")
		os.Exit(2)
	}
	upstream := os.Args[1]
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
	client := &http.Client{Transport: tr}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "addr=%s\n", ln.Addr())
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := upstream
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, target, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	})}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
