package serve_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// FuzzDaemon sends any bytes to the daemon over a real loopback connection,
// then ends its side. Whatever the bytes, the daemon must not crash or hang,
// what it writes back must be whole HTTP responses and nothing else, and
// the upstream must never be asked for a path outside the endpoint's base,
// with a query parameter the config sets overridden, or with a query name
// that holds a control character.
func FuzzDaemon(f *testing.F) {
	for _, seed := range []string{
		"GET /call/ha/api/states HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET /call/ha/a HTTP/1.1\r\nHost: H\r\n\r\nGET /call/ha/b?x=1 HTTP/1.0\r\nHost: H\r\n\r\n",
		"POST /call/ha HTTP/1.1\r\nHost: H\r\nContent-Length: 3\r\n\r\nabc",
		"POST /call/ha HTTP/1.1\r\nHost: H\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"POST /call/ha HTTP/1.1\r\nHost: H\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nz",
		"GET /call/ha/..;/admin HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET /call/ha/x?KEY=theirs&key[]=2 HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET /call/ha/x?key%00=theirs&%20key=2&k.ey=3 HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET http://H/call/ha HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET /call/ha/%2e%2e/x HTTP/1.1\r\nHost: H\r\n\r\n",
		"GET /api/circuits HTTP/1.1\r\nHost: H\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef",
		"\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	var mu sync.Mutex
	var asked []string // what the upstream was asked for
	up := newRawUpstream(f, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.RequestURI())
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	})
	d := start(f, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("ha", up+"/base?key=mine", func(e *httpcall.Endpoint) {
		e.AllowSubpath, e.PassQuery, e.PassBody = true, true, true
	})}}, serve.Options{ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})

	f.Fuzz(func(t *testing.T, in []byte) {
		in = bytes.ReplaceAll(in, []byte("Host: H"), []byte("Host: "+d.addr))
		c, err := net.Dial("tcp", d.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute)) // a hang fails the read below
		go func() {
			c.Write(in)
			c.(*net.TCPConn).CloseWrite()
		}()
		out, err := io.ReadAll(c)
		if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Fatalf("reading the answers to %q: %v (read %q)", in, err, out)
		}
		br := bufio.NewReader(bytes.NewReader(out))
		for {
			if _, err := br.Peek(1); err == io.EOF {
				break
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("the answer to %q is not whole HTTP responses: %v\n%q", in, err, out)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Fatalf("an answer's body to %q is cut short: %v\n%q", in, err, out)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, uri := range asked {
			path, query, _ := strings.Cut(uri, "?")
			if path != "/base" && !strings.HasPrefix(path, "/base/") || strings.Contains(path, "/../") || strings.Contains(path, ";") {
				t.Fatalf("the upstream was asked for %q, outside the endpoint's base", uri)
			}
			q, _ := url.ParseQuery(query)
			var keys []string
			for k, vs := range q {
				if strings.ContainsFunc(k, func(c rune) bool { return c < ' ' || c == 0x7f }) {
					t.Fatalf("the upstream was asked for %q: a query name with a control character", uri)
				}
				// "key[...]" is key's array, as PHP reads it; a "[" that
				// no "]" follows is part of another name ("key[" is "key_").
				name := strings.ToLower(k)
				if i := strings.IndexByte(name, '['); i >= 0 && strings.Contains(name[i:], "]") {
					name = name[:i]
				}
				if name == "key" {
					keys = append(keys, k+"="+strings.Join(vs, ","))
				}
			}
			if len(keys) != 1 || keys[0] != "key=mine" {
				t.Fatalf("the upstream was asked for %q: the config's key parameter overridden (%q)", uri, keys)
			}
		}
		asked = asked[:0]
	})
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}
