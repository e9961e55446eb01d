package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
)

// topMQTT reads the top-level mqtt: block: the broker notifications and
// health watches share unless they name their own.
func (l *loader) topMQTT(e entry, b *block) *notify.MQTT {
	m := &notify.MQTT{}
	given, ok := l.read(e, b, m, nil, "")
	if !ok {
		return nil
	}
	if _, hasBroker := lookup(given, "broker"); !hasBroker {
		l.errorAt(e, e.path, "broker is required")
		return nil
	}
	return m
}

// watchRead is a circuit's health: mqtt: block as its keys are read.
type watchRead struct {
	notify.Watch
	good bool    // every key was read without a problem
	upAt *Source // where up: is set, if it is
}

// watch reads a circuit's health: mqtt: block, and says where its up: is
// set (for explain, even when the block has problems).
func (l *loader) watch(e entry, circuit string, b *block) (*notify.Watch, *Source) {
	w := &watchRead{Watch: notify.Watch{Circuit: circuit, Settle: notify.DefaultWatchSettle}, good: true}
	given, ok := l.read(e, b, w, nil, "")
	if !ok {
		return nil, nil
	}
	_, hasTopic := lookup(given, "topic")
	_, hasUp := lookup(given, "up")
	switch {
	case !hasTopic:
		l.errorAt(e, e.path, "topic is required")
	case !hasUp:
		l.errorAt(e, e.path, `up is required: a jq condition, like '(.state? // .) == "online"'`)
	case l.mqttBase == nil:
		l.errorAt(e, e.path, "needs a top-level mqtt: block with the broker (mqtt: {broker: tcp://host:1883})")
	case w.good:
		return &w.Watch, w.upAt
	}
	return nil, w.upAt
}

// upCondition reads a watch's up:, a jq condition that must not be empty.
func (l *loader) upCondition(f entry) (httpcall.JQ, bool) {
	j, ok := l.jq(f)
	if ok && j.IsZero() {
		l.errorf(f.value, f.path, `want a jq condition, like '(.state? // .) == "online"'`)
		return httpcall.JQ{}, false
	}
	return j, ok
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

// inheritMQTT fills what a notify: mqtt: block (given: its entries) leaves
// out from the top-level mqtt: block: the broker, and the username and
// password unless it sets its own or names another broker. It reports
// whether m has a broker.
func (l *loader) inheritMQTT(m *notify.MQTT, given []entry) bool {
	_, hasBroker := lookup(given, "broker")
	b := l.mqttBase
	if b == nil {
		return hasBroker
	}
	if !hasBroker {
		m.Broker = b.Broker
	} else if m.Broker != b.Broker {
		return true
	}
	if _, ok := lookup(given, "username"); !ok {
		m.Username = b.Username
	}
	if _, ok := lookup(given, "password"); !ok {
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
