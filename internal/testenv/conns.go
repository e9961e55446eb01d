package testenv

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago:
// nothing listens there, so a connection to it is refused, until a test
// starts a server on it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ServeConns listens on a free port of 127.0.0.1 and serves each connection
// with serve, on a goroutine of its own, until the test ends: then done is
// closed, the listener and every connection are closed, and every serve is
// waited for. serve reads and writes the bytes itself, so a test can make a
// peer misbehave in ways net/http's server will not. It returns the address
// and a count of the connections accepted so far.
func ServeConns(t testing.TB, serve func(c net.Conn, done <-chan struct{})) (addr string, accepted func() int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		n     atomic.Int64
		done  = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				serve(c, done)
			})
		}
	})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), n.Load
}
