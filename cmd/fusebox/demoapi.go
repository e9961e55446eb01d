package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// flakyAPI is the demo's own upstream on 127.0.0.1: a weather API and a
// backup whose health the demo scripts.
type flakyAPI struct {
	mu       sync.Mutex
	mode     map[string]apiMode
	failLeft map[string]int
	requests map[string]int // by path, while down
	total    map[string]int
	srv      *http.Server
	url      string
}

type apiMode int

const (
	apiUp    apiMode = iota
	apiDown          // 503
	apiFlaky         // 503 for failLeft requests, then up
	apiSlow          // up, answering after half a second
)

func startFlakyAPI() (*flakyAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	a := &flakyAPI{
		mode: map[string]apiMode{}, failLeft: map[string]int{},
		requests: map[string]int{}, total: map[string]int{},
		url: "http://" + ln.Addr().String(),
	}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	go a.srv.Serve(ln)
	return a, nil
}

func (a *flakyAPI) set(path string, m apiMode, failures int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mode[path], a.failLeft[path] = m, failures
}

// downRequests returns how many requests reached path while it was failing.
func (a *flakyAPI) downRequests(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[path]
}

func (a *flakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	a.mu.Lock()
	a.total[path]++
	m := a.mode[path]
	fail := m == apiDown || (m == apiFlaky && a.failLeft[path] > 0)
	if fail {
		a.failLeft[path]--
		a.requests[path]++
	}
	a.mu.Unlock()
	if fail {
		http.Error(w, `{"error":"bridge restarting"}`, http.StatusServiceUnavailable)
		return
	}
	if m == apiSlow {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	temp := map[string]string{"weather": "21.5", "backup": "21.3"}[path]
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"main":{"temp":%s}}`+"\n", temp)
}

func (a *flakyAPI) close() { a.srv.Close() }
