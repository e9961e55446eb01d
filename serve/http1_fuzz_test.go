package serve

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// FuzzHTTP1 sends any bytes to http1 over a real loopback connection, then
// ends its side: whatever the bytes, the server must not crash or hang, and
// what it writes back must be whole HTTP responses and nothing else.
func FuzzHTTP1(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
		"GET http://x/ HTTP/1.1\r\n\r\n",
		"\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		w.Write(b)
	})
	s := newHTTP1(handler)
	s.idleTimeout, s.maxHeaderBytes = 5*time.Second, 1<<10 // a header past the limit is quick to find
	done := make(chan error, 1)
	go func() { done <- s.serve(ln) }()
	f.Cleanup(func() {
		s.close()
		<-done
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails the read below
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
		}()
		out, err := io.ReadAll(c)
		if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("reading the answers: %v (got %q)", err, out)
		}
		br := bufio.NewReader(bytes.NewReader(out))
		for {
			if _, err := br.Peek(1); err == io.EOF {
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("not an HTTP response: %v in %q", err, out)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("a response body: %v in %q", err, out)
			}
		}
	})
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && bytes.Contains([]byte(ne.Err.Error()), []byte("reset"))
}
