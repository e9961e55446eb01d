package config

import (
	"github.com/fusebox-hq/fusebox/httpcall"
)

// expect reads what a good response looks like: status codes and a jq
// condition.
func (l *loader) expect(e entry, b *block) httpcall.Expect {
	var x httpcall.Expect
	l.read(e, b, &x, nil, "")
	return x
}

// statusCodes reads a list of HTTP status codes, leaving out those that
// are not (and saying so).
func (l *loader) statusCodes(f entry) []int {
	var codes []int
	items, _ := l.list(f.value, f.path, "status codes, like [200, 204]")
	for _, item := range items {
		if code, ok := l.integer(item, f.path); ok && l.statusCode(item, f.path, code) {
			codes = append(codes, code)
		}
	}
	return codes
}

// jq reads a jq program and compiles it: httpcall runs the program
// compiled here. Empty means none; with Env.UncheckedJQ it is kept as text.
func (l *loader) jq(e entry) (httpcall.JQ, bool) {
	s, ok := l.str(e.value, e.path)
	if !ok || s == "" || l.env.UncheckedJQ {
		return httpcall.JQSource(s), ok
	}
	j, err := httpcall.CompileJQ(s)
	if err != nil {
		l.errorf(e.value, e.path, "invalid jq expression: %s", l.redact(err.Error()))
		return httpcall.JQ{}, false
	}
	return j, true
}

// maxBody reads a positive byte size.
func (l *loader) maxBody(e entry) (int64, bool) {
	s, ok := l.text(e.value, e.path, "a size like 10MiB")
	if !ok {
		return 0, false
	}
	n, err := parseSize(s)
	switch {
	case err != nil:
		l.errorf(e.value, e.path, "%v", err)
	case n < 0:
		l.errorf(e.value, e.path, "must not be negative, got %s", s)
	case n == 0:
		l.errorf(e.value, e.path, "must be more than 0 (leave it out for the default, 10MiB)")
	default:
		return n, true
	}
	return 0, false
}
