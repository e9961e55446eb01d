package serve

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// FuzzGuardPath checks that whatever request target a client sends, the
// guard passes only a plain path: no dot segment, encoded dot, slash or
// backslash, no absolute form, and nothing a cleaner would rewrite; and a
// query none of whose parameter names holds a control character.
func FuzzGuardPath(f *testing.F) {
	for _, s := range []string{"/call/weather", "/call/ha/api/states/sensor.x?a=b", "http://x/", "/call/../x",
		"/call/%2e%2e/x", "/a//b", "*", "/call/.%2E/x", "/x?..", "/%c0%ae%c0%ae/",
		"/call/x?appid%00=evil", "/call/x?a=%00", "/call/x?%09appid=1", "/call/x?a%0d%0ab=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: h\r\n\r\n")))
		if err != nil {
			return // the server would answer 400 before any handler
		}
		if notAPath(req) != "" {
			return
		}
		path, _, _ := strings.Cut(req.RequestURI, "?")
		if !strings.HasPrefix(path, "/") || req.URL.Host != "" {
			t.Fatalf("passed a non-path target %q", target)
		}
		for _, seg := range strings.Split(req.URL.Path, "/") {
			if seg == "." || seg == ".." || strings.Contains(seg, "\\") {
				t.Fatalf("passed %q, whose decoded path %q has segment %q", target, req.URL.Path, seg)
			}
		}
		if strings.Contains(req.URL.Path, "//") {
			t.Fatalf("passed %q, whose decoded path %q has an empty segment", target, req.URL.Path)
		}
		if notAQuery(req) != "" {
			return
		}
		for k := range req.URL.Query() {
			for _, c := range []byte(k) {
				if c < ' ' || c == 0x7f {
					t.Fatalf("passed %q, whose query name %q holds the control byte %#x", target, k, c)
				}
			}
		}
	})
}
