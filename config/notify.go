package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/redirect"
)

// notifyRules reads notify: over base (the defaults' rules, for a circuit):
// each key set here replaces base's.
func (l *loader) notifyRules(e entry, base notify.Rules) notify.Rules {
	r := base
	entries, _ := l.mapping(e.value, e.path)
	for _, f := range entries {
		switch f.name {
		case "after":
			set(&r.After)(l.duration(f.value, f.path))
		case "probe_failed":
			n, ok := l.integer(f.value, f.path)
			if ok && n < 1 {
				l.errorf(f.value, f.path, "must be at least 1, got %d", n)
				ok = false
			}
			set(&r.ProbeFailed)(n, ok)
		case "timeout":
			set(&r.Timeout)(l.positive(f))
		case "webhooks":
			r.Webhooks = l.webhooks(f)
		case "on_open":
			set(&r.OnOpen)(l.argv(f))
		case "on_close":
			set(&r.OnClose)(l.argv(f))
		case "heartbeats":
			r.Heartbeats = l.heartbeats(f)
		case "mqtt":
			r.MQTT = l.mqtt(f)
		default:
			l.unknownKey(f, table().notify.names()...)
		}
	}
	return r
}

func (l *loader) webhooks(e entry) []notify.Webhook {
	return urlItems(l, e, "webhooks", func(entries []entry) (notify.Webhook, bool) {
		w, hasURL := notify.Webhook{Format: notify.JSON}, false
		for _, f := range entries {
			switch f.name {
			case "url":
				set(&w.URL)(l.url(f))
				hasURL = true
			case "format":
				set(&w.Format)(oneOf(l, f, notify.Formats))
			case "headers":
				w.Headers = l.headers(f)
			case "redirects":
				set(&w.Redirects)(l.notifyRedirects(f))
			default:
				l.unknownKey(f, table().webhook.names()...)
			}
		}
		return w, hasURL
	})
}

func (l *loader) heartbeats(e entry) []notify.Heartbeat {
	return urlItems(l, e, "heartbeat URLs", func(entries []entry) (notify.Heartbeat, bool) {
		hb, hasURL := notify.Heartbeat{Kind: notify.Healthchecks}, false
		for _, f := range entries {
			switch f.name {
			case "url":
				set(&hb.URL)(l.url(f))
				hasURL = true
			case "kind":
				set(&hb.Kind)(oneOf(l, f, notify.HeartbeatKinds))
			case "redirects":
				set(&hb.Redirects)(l.notifyRedirects(f))
			default:
				l.unknownKey(f, table().heartbeat.names()...)
			}
		}
		return hb, hasURL
	})
}

// notifyRedirects reads a webhook's or heartbeat's redirects: as an
// endpoint's.
func (l *loader) notifyRedirects(e entry) (redirect.Policy, bool) {
	r, ok := l.redirects(e)
	return redirect.Policy(r), ok
}

// urlItems reads a list of mappings, each read by read, which reports
// whether the item had its required url:.
func urlItems[T any](l *loader, e entry, what string, read func([]entry) (T, bool)) []T {
	items, _ := l.list(e.value, e.path, what)
	var out []T
	for i, item := range items {
		path := fmt.Sprintf("%s[%d]", e.path, i)
		entries, ok := l.mapping(item, path)
		if !ok {
			continue
		}
		v, hasURL := read(entries)
		if !hasURL {
			l.errorf(item, path, "url is required")
			continue
		}
		out = append(out, v)
	}
	return out
}

func (l *loader) mqtt(e entry) *notify.MQTT {
	entries, ok := l.mapping(e.value, e.path)
	if !ok {
		return nil
	}
	m := &notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant"}
	var seen brokerKeys
	for _, f := range entries {
		if l.brokerKey(m, f, &seen) {
			continue
		}
		switch f.name {
		case "prefix":
			set(&m.Prefix)(l.topic(f, false))
		case "discovery":
			set(&m.Discovery)(l.topic(f, true))
		case "instance":
			set(&m.Instance)(l.instance(f))
		case "controls":
			set(&m.Controls)(l.boolean(f.value, f.path))
		case "controls_trip_for":
			set(&m.ControlsTripFor)(l.positive(f))
		default:
			l.unknownKey(f, table().notifyMQTT.names()...)
		}
	}
	if !l.inheritMQTT(m, seen) {
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
