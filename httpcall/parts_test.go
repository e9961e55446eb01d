package httpcall

import (
	"errors"
	"fmt"
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
		{"a parameter of its own with brackets", CallOptions{Query: url.Values{"ids[]": {"1"}}}, "http://ha.lan:8123/api?k=v&ids%5B%5D=1"},
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

// A caller's query name that a server reads as a parameter the config's
// URL sets is refused: PHP cuts names at a NUL, skips leading spaces and
// reads "." and " " as "_"; other servers trim the spaces around a name.
func TestQueryNameSpellingsOfAConfigParameter(t *testing.T) {
	ep := &endpoint{Endpoint: Endpoint{URL: "http://ha.lan/api?app_id=mine", PassQuery: true}}
	for _, k := range []string{
		"app_id\x00=evil", "app_id\x00", " app_id", "app_id ", "  APP_ID", "app.id", "app id", " app.id", "app.id[]", "app id[0]",
		"app[id", "APP.ID\x00x", "app_\u0131d",
	} {
		if _, err := ep.parts(CallOptions{Query: url.Values{k: {"theirs"}}}); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%q beside a configured app_id: %v; want it refused", k, err)
		}
	}
	for _, k := range []string{"app_ids", "app", "id", "appid", "app.id.x", "app_id_x", "x[app_id]"} {
		if _, err := ep.parts(CallOptions{Query: url.Values{k: {"1"}}}); err != nil {
			t.Errorf("%q, a parameter of its own: %v", k, err)
		}
	}
}

// FuzzQueryNameSpellings checks properties of which caller query names are
// refused beside a configured app_id, rather than the rule itself: the
// spellings servers read alike are refused alike (case, leading spaces, what
// follows a NUL, PHP's "." for "_", an array's brackets), app_id itself is
// refused, and a name refused holds the letters of "appid" in order.
func FuzzQueryNameSpellings(f *testing.F) {
	for _, s := range []string{"app_id", "app.id", " x", "a[b]", "app_id\x00z", "APP id", "q"} {
		f.Add(s)
	}
	ep := &endpoint{Endpoint: Endpoint{URL: "http://ha.lan/api?app_id=mine", PassQuery: true}}
	refused := func(k string) bool {
		_, err := ep.parts(CallOptions{Query: url.Values{k: {"1"}}})
		return errors.Is(err, ErrNotAllowed)
	}
	if !refused("app_id") {
		f.Fatal("app_id itself passes")
	}
	f.Fuzz(func(t *testing.T, k string) {
		r := refused(k)
		same := func(what, k2 string) {
			if refused(k2) != r {
				t.Fatalf("%q refused %v, but %q (%s) refused %v", k, r, k2, what, !r)
			}
		}
		same("in capitals", strings.ToUpper(k))
		same("with a leading space", " "+k)
		if !strings.Contains(k, "\x00") {
			same("cut at a NUL", k+"\x00evil")
		}
		if k != "" && !strings.ContainsAny(k, "[ \t\n\v\f\r\x00") {
			same("with dots for underscores", strings.ReplaceAll(k, "_", "."))
			same("with underscores for dots", strings.ReplaceAll(k, ".", "_"))
			same("as an array", k+"[]")
			same("indexed", k+"[0]")
		}
		if r {
			var letters []rune
			for _, c := range strings.ToLower(k) {
				if c >= 'a' && c <= 'z' {
					letters = append(letters, c)
				}
			}
			if !strings.Contains(string(letters), "appid") {
				t.Fatalf("%q refused beside app_id, but holds no spelling of it", k)
			}
		}
	})
}

// A caller's query never crowds out the config's parameters: 1,000 caller
// parameters sorted before the config's pushed its appid past PHP's
// max_input_vars (1000), and the configured secret was gone. The caller's
// query is bounded (each value of a repeated name counted, its bytes
// counted before it is encoded) and refused past the bound with
// ErrQueryTooLarge; within it the config's parameters come first, as
// written.
func TestACallersQueryCannotCrowdOutTheConfigs(t *testing.T) {
	ep := &endpoint{Endpoint: Endpoint{URL: "http://php.lan/weather.php?zz=1&appid=mine", PassQuery: true}}
	many := func(n int, name func(int) string, value string) url.Values {
		q := url.Values{}
		for i := range n {
			q.Add(name(i), value)
		}
		return q
	}
	distinct := func(i int) string { return fmt.Sprintf("a%04d", i) }
	same := func(int) string { return "id" }
	for _, c := range []struct {
		name    string
		q       url.Values
		refused bool
	}{
		{"1,000 names sorted before the config's", many(1000, distinct, "1"), true},
		{"101 names", many(MaxQueryParams+1, distinct, "1"), true},
		{"one name repeated 1,000 times", many(1000, same, "1"), true},
		{"one name repeated 101 times", many(MaxQueryParams+1, same, "1"), true},
		{"a value of 1 MB", url.Values{"note": {strings.Repeat("x", 1<<20)}}, true},
		{"a name of 1 MB", url.Values{strings.Repeat("n", 1<<20): {"1"}}, true},
		{"a value that triples when escaped", url.Values{"path": {strings.Repeat("/", MaxQueryBytes/2)}}, true},
		{"100 names of 40 bytes", many(MaxQueryParams, func(i int) string { return fmt.Sprintf("%040d", i) }, "1"), true},
		{"100 names within the bound", many(MaxQueryParams, distinct, "1"), false},
		{"a value within the bound", url.Values{"note": {strings.Repeat("x", MaxQueryBytes-10)}}, false},
	} {
		p, err := ep.parts(CallOptions{Query: c.q})
		if c.refused {
			if !errors.Is(err, ErrQueryTooLarge) || !strings.Contains(err.Error(), "more than the") {
				t.Errorf("%s: %v; want ErrQueryTooLarge saying the bound", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v; want it passed", c.name, err)
			continue
		}
		if !strings.HasPrefix(p.url, "http://php.lan/weather.php?zz=1&appid=mine&") {
			t.Errorf("%s: %.80s...; want the config's parameters first, as written", c.name, p.url)
		}
	}
}
