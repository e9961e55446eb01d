package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/fusebox-hq/fusebox/notify"
)

// brokerKeys says which of topMQTTBlock's keys a block set.
type brokerKeys struct{ broker, username, password bool }

// brokerKey reads f into m when it is one of topMQTTBlock's keys, those the
// top-level mqtt: block and a notify: mqtt: block share, noting it in seen;
// it reports whether it was.
func (l *loader) brokerKey(m *notify.MQTT, f entry, seen *brokerKeys) bool {
	switch f.name {
	case "broker":
		set(&m.Broker)(l.broker(f))
		seen.broker = true
	case "username":
		set(&m.Username)(l.str(f.value, f.path))
		seen.username = true
	case "password":
		set(&m.Password)(l.str(f.value, f.path))
		seen.password = true
	default:
		return false
	}
	return true
}

// topMQTT reads the top-level mqtt: block: the broker notifications and
// health watches share unless they name their own.
func (l *loader) topMQTT(e entry) *notify.MQTT {
	entries, ok := l.mapping(e.value, e.path)
	if !ok {
		return nil
	}
	m := &notify.MQTT{}
	var seen brokerKeys
	for _, f := range entries {
		if !l.brokerKey(m, f, &seen) {
			l.unknownKey(f, table().topMQTT.names()...)
		}
	}
	if !seen.broker {
		l.errorAt(e, e.path, "broker is required")
		return nil
	}
	return m
}

// circuitHealth reads a circuit's health: block, whose one form is mqtt: (an
// endpoint's HTTP health check is its http: block's health:).
func (l *loader) circuitHealth(e entry, circuit string) *notify.Watch {
	entries, _ := l.mapping(e.value, e.path)
	var w *notify.Watch
	for _, f := range entries {
		switch f.name {
		case "mqtt":
			w = l.watch(f, circuit)
		case "path", "interval", "expect":
			l.errorAt(f, f.path, "an HTTP health check goes in the circuit's http: block (http: {health: {%s: ...}}); health: here takes mqtt:", f.name)
		default:
			l.unknownKey(f, table().circuitHealth.names()...)
		}
	}
	return w
}

func (l *loader) watch(e entry, circuit string) *notify.Watch {
	entries, ok := l.mapping(e.value, e.path)
	if !ok {
		return nil
	}
	w := &notify.Watch{Circuit: circuit, Settle: notify.DefaultWatchSettle}
	hasTopic, hasUp, good := false, false, true
	for _, f := range entries {
		switch f.name {
		case "topic":
			s, ok := l.watchTopic(f)
			w.Topic, hasTopic, good = s, true, good && ok
		case "up":
			s, ok := l.jq(f)
			if ok && s == "" {
				l.errorf(f.value, f.path, `want a jq condition, like '(.state? // .) == "online"'`)
				ok = false
			}
			w.Up, hasUp, good = s, true, good && ok
			src := l.sources(keyRefs{"up": f})["up"]
			l.watchUp = &src
		case "settle":
			d, ok := l.duration(f.value, f.path)
			w.Settle, good = d, good && ok
		default:
			l.unknownKey(f, table().watch.names()...)
		}
	}
	switch {
	case !hasTopic:
		l.errorAt(e, e.path, "topic is required")
	case !hasUp:
		l.errorAt(e, e.path, `up is required: a jq condition, like '(.state? // .) == "online"'`)
	case l.mqttBase == nil:
		l.errorAt(e, e.path, "needs a top-level mqtt: block with the broker (mqtt: {broker: tcp://host:1883})")
	case good:
		return w
	}
	return nil
}

// watchTopic reads a topic to subscribe to: one topic, no wildcards.
func (l *loader) watchTopic(e entry) (string, bool) {
	s, ok := l.text(e.value, e.path, "a topic like zigbee2mqtt/bridge/state")
	if ok && (s == "" || strings.ContainsAny(s, "+#\x00") || strings.HasPrefix(s, "$")) {
		l.errorf(e.value, e.path, "want one topic like zigbee2mqtt/bridge/state, without + or # or a leading $")
		return "", false
	}
	return s, ok
}

// inheritMQTT fills what a notify: mqtt: block leaves out from the
// top-level mqtt: block: the broker, and the username and password unless
// it sets its own or names another broker. It reports whether m has a
// broker.
func (l *loader) inheritMQTT(m *notify.MQTT, seen brokerKeys) bool {
	b := l.mqttBase
	if b == nil {
		return seen.broker
	}
	if !seen.broker {
		m.Broker = b.Broker
	} else if m.Broker != b.Broker {
		return true
	}
	if !seen.username {
		m.Username = b.Username
	}
	if !seen.password {
		m.Password = b.Password
	}
	return true
}

// watchBrokers sets each watch's broker: the first notify: mqtt: (defaults'
// then the circuits' by name) that names the top-level block's broker and
// credentials, so that the daemon holds one connection; else the
// top-level block with notify's prefix and no discovery: a config that
// only watches asked Home Assistant for no device.
func watchBrokers(c *Config) {
	if c.MQTT == nil {
		return
	}
	broker := notify.MQTT{Broker: c.MQTT.Broker, Username: c.MQTT.Username, Password: c.MQTT.Password, Prefix: "fusebox"}
	rules := []notify.Rules{c.DefaultNotify}
	for _, name := range slices.Sorted(maps.Keys(c.Circuits)) {
		rules = append(rules, c.Circuits[name].Notify)
	}
	for _, r := range rules {
		if m := r.MQTT; m != nil && m.Broker == broker.Broker && m.Username == broker.Username && m.Password == broker.Password {
			broker = *m
			break
		}
	}
	for _, circ := range c.Circuits {
		if circ.Watch != nil {
			circ.Watch.Broker = broker
			circ.Watch.Policy = circ.Policy
		}
	}
}

// Watches returns the circuits' health watches, sorted by circuit.
func (c *Config) Watches() []notify.Watch {
	if c == nil {
		return nil
	}
	var out []notify.Watch
	for _, name := range slices.Sorted(maps.Keys(c.Circuits)) {
		if w := c.Circuits[name].Watch; w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// Watch returns the named circuit's health watch, nil when it has none.
func (c *Config) Watch(name string) *notify.Watch {
	if c == nil || c.Circuits[name] == nil {
		return nil
	}
	return c.Circuits[name].Watch
}
