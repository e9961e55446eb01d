package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/fusebox-hq/fusebox/notify"
)

// notifyRules reads notify: over base (the defaults' rules, for a circuit):
// each key set here replaces base's.
func (l *loader) notifyRules(e entry, base notify.Rules, b *block) notify.Rules {
	r := base
	l.read(e, b, &r, nil, "")
	return r
}

// urlItems reads a list of mappings with b's keys, each over start, and
// keeps those with their required url:.
func urlItems[T any](l *loader, e entry, what string, b *block, start T) []T {
	items, _ := l.list(e.value, e.path, what)
	var out []T
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", e.path, i)
		v := start
		given, ok := l.read(entry{path: path, value: item}, b, &v, nil, "")
		if !ok {
			continue
		}
		if _, hasURL := lookup(given, "url"); !hasURL {
			l.errorf(item, path, "url is required")
			continue
		}
		out = append(out, v)
	}
	return out
}

// mqtt reads a notify: mqtt: block; what it leaves out of the broker's
// keys comes from the top-level mqtt: block (inheritMQTT).
func (l *loader) mqtt(e entry, b *block) *notify.MQTT {
	m := &notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant"}
	given, ok := l.read(e, b, m, nil, "")
	if !ok {
		return nil
	}
	if !l.inheritMQTT(m, given) {
		l.errorAt(e, e.path, "broker is required (here, or in a top-level mqtt: block)")
		return nil
	}
	return m
}

// broker reads tcp://host:port (mqtt:// is the same).
func (l *loader) broker(e entry) (string, bool) {
	s, ok := l.str(e.value, e.path)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "mqtt") || u.Hostname() == "" || u.Port() == "" {
		l.errorf(e.value, e.path, "want a broker like tcp://host:1883")
		return "", false
	}
	return s, true
}

// topic reads a topic prefix: no wildcards, no leading or trailing slash;
// empty only where allowed (discovery: "" turns discovery off).
func (l *loader) topic(e entry, mayBeEmpty bool) (string, bool) {
	s, ok := l.text(e.value, e.path, "a topic prefix")
	switch {
	case !ok:
		return "", false
	case s == "" && !mayBeEmpty, strings.ContainsAny(s, "+#\x00"), strings.HasPrefix(s, "/"), strings.HasSuffix(s, "/"):
		l.errorf(e.value, e.path, "want a topic prefix like fusebox, without + # or a leading or trailing /")
		return "", false
	}
	return s, true
}

// instance reads the name this host's circuits carry in Home Assistant.
func (l *loader) instance(e entry) (string, bool) {
	s, ok := l.text(e.value, e.path, "a name like nas")
	if !ok {
		return "", false
	}
	if !notify.ValidInstance(s) {
		l.errorf(e.value, e.path, "want a name of 1 to 64 letters, digits, '.', '_' or '-', like nas, got %q", s)
		return "", false
	}
	return s, true
}

// argv reads a command as a list of arguments, run without a shell.
func (l *loader) argv(e entry) ([]string, bool) {
	items, ok := l.list(e.value, e.path, "arguments, like [/path/to/script, arg]")
	if !ok {
		return nil, false
	}
	var argv []string
	for i, item := range items {
		s, ok := l.str(item, fmt.Sprintf("%s[%d]", e.path, i))
		if !ok {
			return nil, false
		}
		argv = append(argv, s)
	}
	if len(argv) == 0 || argv[0] == "" {
		l.errorAt(e, e.path, "want a command: [/path/to/script, arg, ...]")
		return nil, false
	}
	return argv, true
}

// oneOf reads one of the names in want.
func oneOf[T ~string](l *loader, e entry, want []T) (T, bool) {
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = string(w)
	}
	s, ok := l.text(e.value, e.path, strings.Join(names, " or "))
	if !ok {
		return "", false
	}
	if slices.Contains(names, s) {
		return T(s), true
	}
	if near := nearest(s, names); near != "" {
		l.errorf(e.value, e.path, "unknown %s %q (did you mean %s?)", e.name, s, near)
	} else {
		l.errorf(e.value, e.path, "unknown %s %q; want one of %s", e.name, s, strings.Join(names, ", "))
	}
	return "", false
}
