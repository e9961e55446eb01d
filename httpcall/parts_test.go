package httpcall

import (
	"errors"
	"net/url"
	"path"
	"strings"
	"testing"
)

func TestRequestPartsStayBelowTheURL(t *testing.T) {
	open := &endpoint{Endpoint: Endpoint{URL: "http://ha.lan:8123/api?k=v", AllowSubpath: true, PassQuery: true, PassBody: true}}
	for _, c := range []struct {
		name string
		opt  CallOptions
		want string // "" when refused
	}{
		{"a state below the base", CallOptions{Subpath: "states/sensor.x"}, "http://ha.lan:8123/api/states/sensor.x?k=v"},
		{"a query added", CallOptions{Query: url.Values{"since": {"1h"}}}, "http://ha.lan:8123/api?k=v&since=1h"},
		{"characters escaped, not interpreted", CallOptions{Subpath: "a?b#c d"}, "http://ha.lan:8123/api/a%3Fb%23c%20d?k=v"},
		{"dot-dot", CallOptions{Subpath: "../admin"}, ""},
		{"dot-dot deeper", CallOptions{Subpath: "states/../../x"}, ""},
		{"dot", CallOptions{Subpath: "./x"}, ""},
		{"empty segment", CallOptions{Subpath: "a//b"}, ""},
		{"leading slash", CallOptions{Subpath: "/etc"}, ""},
		{"backslash", CallOptions{Subpath: `..\x`}, ""},
		{"an escape", CallOptions{Subpath: "%2e%2e/x"}, ""},
		{"a config parameter", CallOptions{Query: url.Values{"k": {"mine"}}}, ""},
		{"dot-dot with a parameter (Tomcat, Jetty)", CallOptions{Subpath: "..;/x"}, ""},
		{"a parameter anywhere", CallOptions{Subpath: "a;jsessionid=1/b"}, ""},
		{"three dots", CallOptions{Subpath: ".../x"}, ""},
		{"dot-dot and a space", CallOptions{Subpath: ".. /x"}, ""},
		{"fullwidth dots", CallOptions{Subpath: "\uff0e\uff0e/x"}, ""},
		{"a control character", CallOptions{Subpath: "a\rb"}, ""},
		{"dots inside a name", CallOptions{Subpath: "sensor..x/a.b"}, "http://ha.lan:8123/api/sensor..x/a.b?k=v"},
		{"a config parameter in capitals", CallOptions{Query: url.Values{"K": {"mine"}}}, ""},
		{"a config parameter as an array", CallOptions{Query: url.Values{"k[]": {"mine"}}}, ""},
		{"a config parameter indexed", CallOptions{Query: url.Values{"K[0]": {"mine"}}}, ""},
		{"a parameter of its own with brackets", CallOptions{Query: url.Values{"ids[]": {"1"}}}, "http://ha.lan:8123/api?ids%5B%5D=1&k=v"},
	} {
		p, err := open.parts(c.opt)
		switch {
		case c.want == "" && !errors.Is(err, ErrNotAllowed):
			t.Errorf("%s: got %v, %v; want ErrNotAllowed", c.name, p, err)
		case c.want != "" && (err != nil || p.url != c.want):
			t.Errorf("%s: got %v, %v; want %s", c.name, p, err, c.want)
		}
	}
	shut := &endpoint{Endpoint: Endpoint{URL: "http://ha.lan/api"}}
	for _, opt := range []CallOptions{{Subpath: "x"}, {Query: url.Values{"a": {"1"}}}, {Body: []byte("x")}} {
		if _, err := shut.parts(opt); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%+v on an endpoint allowing nothing: %v", opt, err)
		}
	}
}

func FuzzRequestPartsNeverLeaveTheBase(f *testing.F) {
	for _, s := range []string{"states/sensor.x", "../x", "a/./b", "%2e%2e", "a/b/c"} {
		f.Add(s)
	}
	ep := &endpoint{Endpoint: Endpoint{URL: "http://ha.lan:8123/api/", AllowSubpath: true}}
	f.Fuzz(func(t *testing.T, sub string) {
		p, err := ep.parts(CallOptions{Subpath: sub})
		if err != nil || sub == "" {
			return
		}
		u, err := url.Parse(p.url)
		if err != nil {
			t.Fatalf("%q gave an unparsable URL %q", sub, p.url)
		}
		if clean := path.Clean(u.Path); u.Host != "ha.lan:8123" || !strings.HasPrefix(clean, "/api/") || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%q left the base: %q", sub, p.url)
		}
		// As a server that cuts a segment's ";parameters" and folds
		// look-alike dots reads it: still no dot segment.
		for seg := range strings.SplitSeq(strings.TrimPrefix(u.Path, "/api/"), "/") {
			seg, _, _ = strings.Cut(seg, ";")
			seg = strings.Trim(strings.NewReplacer("\u2024", ".", "\ufe52", ".", "\uff0e", ".").Replace(seg), " \t")
			if strings.Trim(seg, ".") == "" {
				t.Fatalf("%q passed a segment a server reads as a dot segment: %q", sub, p.url)
			}
		}
	})
}
