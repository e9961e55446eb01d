package serve_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

func TestNoOpenProxy(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
	upHost := strings.TrimPrefix(u.URL, "http://")
	cases := []struct{ name, target string }{
		{"absolute-form URL of the upstream", "http://" + upHost + "/"},
		{"absolute-form URL naming the daemon", "http://" + d.addr + "/call/u"},
		{"dot-dot segment", "/call/../call/u"},
		{"dot-dot at the end", "/api/circuits/.."},
		{"encoded dots", "/call/%2e%2e/call/u"},
		{"encoded dots, upper case", "/call/%2E%2E/u"},
		{"half-encoded dots", "/call/.%2e/u"},
		{"encoded slash", "/call/u%2fx"},
		{"dot segment", "/call/./u"},
		{"backslash", "/call/..\\u"},
		{"double slash", "//call/u"},
		{"asterisk-form", "*"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			line := d.raw(t, fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", c.target, d.addr))
			if !strings.HasPrefix(line, "HTTP/1.1 400") {
				t.Errorf("GET %s: %q, want 400", c.target, line)
			}
		})
	}
	t.Run("CONNECT", func(t *testing.T) {
		line := d.raw(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", upHost, upHost))
		if !strings.HasPrefix(line, "HTTP/1.1 4") {
			t.Errorf("CONNECT: %q, want a 4xx", line)
		}
		line = d.raw(t, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", d.addr, d.addr))
		if !strings.HasPrefix(line, "HTTP/1.1 400") {
			t.Errorf("CONNECT to the daemon: %q, want 400", line)
		}
	})
	if n := u.hits.Load(); n != 0 {
		t.Errorf("the upstream was reached %d times", n)
	}
	// And the plain path still works.
	if r := d.get(t, "/call/u"); r.code != 200 {
		t.Fatalf("/call/u: %d", r.code)
	}
}

func TestHostHeaderMustNameTheDaemon(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{Hosts: []string{"nas.lan"}})
	_, port, _ := net.SplitHostPort(d.addr)
	for host, want := range map[string]int{
		d.addr:                 200,
		"localhost:" + port:    200,
		"LOCALHOST:" + port:    200,
		"nas.lan":              200,
		"nas.lan:" + port:      200,
		"evil.example":         http.StatusMisdirectedRequest,
		"evil.example:" + port: http.StatusMisdirectedRequest, // DNS rebinding: evil.example resolving to 127.0.0.1
		"127.0.0.1:1":          http.StatusMisdirectedRequest,
	} {
		r := d.get(t, "/call/u", func(r *http.Request) { r.Host = host })
		if r.code != want {
			t.Errorf("Host %q: %d, want %d", host, r.code, want)
		}
	}
	if line := d.raw(t, "GET /call/u HTTP/1.0\r\n\r\n"); !strings.Contains(line, " 421 ") {
		t.Errorf("no Host header: %q, want 421", line)
	}
}

func TestTokenIsRequiredOffLoopback(t *testing.T) {
	_, err := serve.New(serve.Targets{}, serve.Options{Listen: "0.0.0.0:8417", Store: nil})
	if err == nil {
		t.Fatal("no store accepted")
	}
	dir := t.TempDir()
	d := startIn(t, dir, serve.Targets{}, serve.Options{})
	_, err = serve.New(serve.Targets{}, serve.Options{Listen: "0.0.0.0:8417", Store: d.store})
	if !errors.Is(err, serve.ErrNeedToken) {
		t.Fatalf("0.0.0.0 without a token: %v, want ErrNeedToken", err)
	}
	if _, err := serve.New(serve.Targets{}, serve.Options{Listen: "192.168.1.5:8417", Store: d.store, Token: "s3cret"}); err != nil {
		t.Fatalf("with a token: %v", err)
	}
}

func TestTokenIsCheckedOnEveryRequest(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{Token: "s3cret-token"})
	for name, c := range map[string]struct {
		header, value string
		want          int
	}{
		"none":             {"", "", 401},
		"wrong bearer":     {"Authorization", "Bearer nope", 401},
		"prefix of it":     {"Authorization", "Bearer s3cret", 401},
		"basic":            {"Authorization", "Basic czNjcmV0LXRva2Vu", 401},
		"bearer":           {"Authorization", "Bearer s3cret-token", 200},
		"bearer lowercase": {"Authorization", "bearer s3cret-token", 200},
		"x-fusebox-token":  {"X-Fusebox-Token", "s3cret-token", 200},
	} {
		for _, path := range []string{"/call/u", "/api/circuits"} {
			r := d.get(t, path, func(r *http.Request) {
				if c.header != "" {
					r.Header.Set(c.header, c.value)
				}
			})
			if r.code != c.want {
				t.Errorf("%s on %s: %d, want %d", name, path, r.code, c.want)
			}
		}
	}
	if r := d.do(t, "POST", "/api/circuits/u/trip"); r.code != 401 {
		t.Errorf("trip without the token: %d", r.code)
	}
}

func TestCrossOriginPostIsRefused(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
	r := d.do(t, "POST", "/api/circuits/u/trip", func(r *http.Request) {
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Origin", "https://evil.example")
	})
	if r.code != http.StatusForbidden {
		t.Fatalf("a cross-site page tripping a circuit: %d, want 403", r.code)
	}
	if r := d.get(t, "/call/u"); r.code != 200 {
		t.Fatalf("the circuit was tripped: %d", r.code)
	}
}

func TestSlowClientIsTimedOut(t *testing.T) {
	d := start(t, serve.Targets{}, serve.Options{ReadHeaderTimeout: 50 * time.Millisecond})
	c, err := net.Dial("tcp", d.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers begun and never finished: the daemon must hang up by itself.
	if _, err := io.WriteString(c, "GET /api/circuits HTTP/1.1\r\nHost: "+d.addr+"\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// The deadline is only a safety net; the daemon's close ends the read.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the daemon kept a slow client's connection open (read %q)", b)
	}
	if strings.Contains(string(b), "200 OK") {
		t.Fatalf("the half request was answered: %q", b)
	}
}

func TestRequestBodyTooLarge(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{MaxRequestBody: 1024})
	big := strings.Repeat("x", 4096)
	r := d.do(t, "POST", "/call/u", func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(big))
		r.ContentLength = int64(len(big))
	})
	if r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared large body: %d, want 413", r.code)
	}
	r = d.do(t, "POST", "/call/u", func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(big))
		r.ContentLength = -1 // chunked: the limit is found while reading
	})
	if r.code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked large body: %d, want 413", r.code)
	}
	if u.hits.Load() != 0 {
		t.Error("a refused request reached the upstream")
	}
}
