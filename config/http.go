package config

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/redirect"
)

// methods are the HTTP methods an endpoint may use.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// httpEndpoint reads the http: block of the circuit r into its endpoint.
// Its timeout is the circuit's (endpointTimeout).
func (l *loader) httpEndpoint(e entry, b *block, r *circuitRead) {
	ep := &httpcall.Endpoint{Name: r.name, Method: "GET", RetryOn: httpcall.DefaultRetryOn(), MaxBody: httpcall.DefaultMaxBody}
	r.endpoint = ep
	l.endpoint = ep
	defer func() { l.endpoint = nil }()
	given, ok := l.read(e, b, r, nil, "")
	if _, hasURL := lookup(given, "url"); ok && !hasURL {
		l.errorAt(e, e.path, "url is required")
	}
}

// endpointTimeout reads an http: block's timeout, which is its circuit's:
// set in one place or the other. The circuit's own keys are read first.
func (l *loader) endpointTimeout(f entry, r *circuitRead) {
	if other, dup := r.refs["timeout"]; dup {
		l.errorAt(f, f.path, "the timeout is already set by %s (line %d): set it once", other.path, other.key.Position.Line)
		return
	}
	set(&r.p.Retry.Timeout)(l.duration(f.value, f.path))
	r.refs["timeout"] = f
}

// positiveInt reads a whole number of at least 1; problem, given the
// number, says why a smaller one is wrong.
func (l *loader) positiveInt(e entry, problem string) (int, bool) {
	n, ok := l.integer(e.value, e.path)
	if ok && n < 1 {
		l.errorf(e.value, e.path, problem, n)
		return 0, false
	}
	return n, ok
}

// health reads an active health check: path, interval and expect.
func (l *loader) health(e entry, b *block) *httpcall.Health {
	h := &httpcall.Health{}
	l.read(e, b, h, nil, "")
	return h
}

// healthPath reads a health check's path: absolute, on the endpoint's host.
func (l *loader) healthPath(f entry) (string, bool) {
	s, ok := l.str(f.value, f.path)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || u.Host != "" || u.Fragment != "" {
		l.errorf(f.value, f.path, "want an absolute path on the endpoint's host, like /api/")
		return "", false
	}
	return s, true
}

// url reads an http or https URL with a host.
func (l *loader) url(e entry) (string, bool) {
	s, ok := l.str(e.value, e.path)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		l.errorf(e.value, e.path, "invalid URL: %s", l.redact(err.Error()))
		return "", false
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		l.errorf(e.value, e.path, "want an http:// or https:// URL with a host")
		return "", false
	}
	return s, true
}

// redirects reads which redirects the endpoint follows.
func (l *loader) redirects(e entry) (redirect.Policy, bool) {
	s, ok := l.text(e.value, e.path, "same-host, none or any")
	if !ok {
		return "", false
	}
	if r := redirect.Policy(s); slices.Contains(redirect.Policies, r) {
		return r, true
	}
	names := make([]string, len(redirect.Policies))
	for k, r := range redirect.Policies {
		names[k] = string(r)
	}
	if near := nearest(s, names); near != "" {
		l.errorf(e.value, e.path, "unknown redirect policy %q (did you mean %s?)", s, near)
		return "", false
	}
	l.errorf(e.value, e.path, "unknown redirect policy %q; want one of %s", s, strings.Join(names, ", "))
	return "", false
}

func (l *loader) method(e entry) (string, bool) {
	s, ok := l.text(e.value, e.path, "an HTTP method")
	if !ok {
		return "", false
	}
	if m := strings.ToUpper(s); slices.Contains(methods, m) {
		return m, true
	}
	l.errorf(e.value, e.path, "unknown method %q; want one of %s", s, strings.Join(methods, ", "))
	return "", false
}

// headers reads a mapping of header names to text values.
func (l *loader) headers(e entry) map[string]string {
	entries, _ := l.mapping(e.value, e.path)
	h := make(map[string]string, len(entries))
	for _, f := range entries {
		if !isToken(f.name) {
			l.errorAt(f, f.path, "invalid header name %q", f.name)
			continue
		}
		v, ok := l.str(f.value, f.path)
		if ok && strings.ContainsAny(v, "\r\n\x00") {
			l.errorf(f.value, f.path, "a header value must not contain a line break or NUL")
			continue
		}
		if ok {
			h[f.name] = v
		}
	}
	return h
}

// isToken reports whether s is an HTTP token (RFC 9110), as a header name
// must be.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}

// retryOn reads a list of failures to retry: connect, timeout, 5xx, 429 or
// status codes.
func (l *loader) retryOn(e entry) (httpcall.RetryOn, bool) {
	var r httpcall.RetryOn
	items, ok := l.list(e.value, e.path, "failures to retry, like [connect, 5xx]")
	for _, item := range items {
		s, itemOK := l.text(item, e.path, "connect, timeout, 5xx, 429 or a status code")
		if !itemOK {
			ok = false
			continue
		}
		switch s {
		case "connect":
			r.Connect = true
		case "timeout":
			r.Timeout = true
		case "5xx":
			r.ServerErrors = true
		case "429":
			r.TooManyRequests = true
		default:
			code, err := strconv.Atoi(s)
			if err != nil {
				l.errorf(item, e.path, "unknown failure %q; want connect, timeout, 5xx, 429 or a status code", s)
				ok = false
			} else if !l.statusCode(item, e.path, code) {
				ok = false
			} else if !slices.Contains(r.Codes, code) {
				r.Codes = append(r.Codes, code)
			}
		}
	}
	return r, ok
}

// statusCode reports whether code is an HTTP status code, and says so when
// it is not.
func (l *loader) statusCode(item ast.Node, path string, code int) bool {
	if 100 <= code && code <= 599 {
		return true
	}
	l.errorf(item, path, "status code %d is outside 100–599", code)
	return false
}
