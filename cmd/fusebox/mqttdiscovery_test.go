package main

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

// haAvailable is whether Home Assistant shows the entity of discovery
// config d available, the broker retaining what retained returns at each
// topic: its availability_topic's, or each topic of its availability list
// by availability_mode (all: every one; any: one; an unset mode is
// latest, which retained messages cannot order: refused).
func haAvailable(t *testing.T, d map[string]any, retained func(topic string) string) bool {
	t.Helper()
	payload := func(m map[string]any, k, def string) string {
		if s, ok := m[k].(string); ok {
			return s
		}
		return def
	}
	if topic, ok := d["availability_topic"].(string); ok {
		return retained(topic) == payload(d, "payload_available", "online")
	}
	list, _ := d["availability"].([]any)
	if len(list) == 0 {
		return true // no availability: always available
	}
	var up []bool
	for _, a := range list {
		m := a.(map[string]any)
		up = append(up, retained(m["topic"].(string)) == payload(m, "payload_available", "online"))
	}
	switch d["availability_mode"] {
	case "all":
		return !slices.Contains(up, false)
	case "any":
		return slices.Contains(up, true)
	}
	t.Fatalf("availability_mode %v: with retained messages only, Home Assistant's latest depends on the order it subscribes in", d["availability_mode"])
	return false
}

// The daemon publishes, at start, the entity of every circuit of its
// config, before any transition: a watched circuit that never changed
// shows closed (OFF), one tripped by a run that published nothing shows
// its trip. Every circuit entity is available while the daemon runs and
// unavailable once it is killed (SIGKILL: no goodbye), by the daemon's
// last will, which each discovery config names; the circuits' own
// availability topics still say online.
func TestServePublishesEveryCircuitAtStartAndItsEntitiesDieWithIt(t *testing.T) {
	broker := testenv.Mosquitto(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	// Tripped before the daemon runs, with a config that names no broker:
	// nothing is published, the store alone knows.
	quiet := writeConfigPath(t, t.TempDir(), "circuits:\n  nas: {attempts: 1}\n")
	if p := fbEnv(t, state, []string{"FUSEBOX_CONFIG=" + quiet}, "trip", "nas"); p.Code != 0 {
		t.Fatalf("trip nas: exit %d: %s", p.Code, p.Stderr)
	}
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`mqtt: {broker: 'tcp://%s'}
defaults:
  notify:
    mqtt: {instance: test}
circuits:
  nas: {attempts: 1}
  plug:
    health:
      mqtt: {topic: home/plug/availability, up: '. == "online"'}
`, broker))
	sub := testenv.Subscribe(t, broker, "#")
	d := startServe(t, state, cfg)

	entities := map[string]map[string]any{}
	for name, want := range map[string]struct{ state, phase string }{"plug": {"OFF", "closed"}, "nas": {"ON", "forced_open"}} {
		entities[name] = discovered(t, sub, "homeassistant/binary_sensor/fusebox_test/circuit_"+name+"/config")
		sub.Wait(t, "fusebox/"+name+"/state", want.state)
		var attrs map[string]any
		if err := json.Unmarshal(sub.Wait(t, "fusebox/"+name+"/attributes", "").Payload, &attrs); err != nil || attrs["state"] != want.phase {
			t.Errorf("%s's attributes at start = %v (%v), want state %s", name, attrs, err, want.phase)
		}
		if _, changed := attrs["changed_at"]; name == "nas" && (attrs["reason"] != "tripped by hand" || !changed) {
			t.Errorf("nas's attributes at start = %v, want the reason and time of its trip, from the event log", attrs)
		} else if name == "plug" && changed {
			t.Errorf("plug's attributes at start = %v, want no changed_at: it never changed", attrs)
		}
	}
	sub.Wait(t, "fusebox/serve/test/availability", "online")
	retained := func(topic string) string { return testenv.Retained(t, broker, topic) }
	for name, e := range entities {
		if !haAvailable(t, e, retained) {
			t.Errorf("%s's entity is unavailable while the daemon runs: %v", name, e)
		}
	}

	if err := d.Cmd.Process.Kill(); err != nil { // SIGKILL, by its PID
		t.Fatal(err)
	}
	d.Wait(t)
	sub.Wait(t, "fusebox/serve/test/availability", "offline") // the broker's will
	for name, e := range entities {
		if haAvailable(t, e, retained) {
			t.Errorf("%s's entity is still available with the daemon dead: %v", name, e)
		}
		if got := retained("fusebox/" + name + "/availability"); got != mqtt.Online {
			t.Errorf("%s's own availability = %q, want online still: the will alone takes the entity away", name, got)
		}
	}
}

// A config that only watches a topic (a top-level mqtt: block, no
// notify:) asks Home Assistant for nothing: the daemon's connection says
// online at its own topic and publishes no discovery, so no device
// appears.
func TestServeWatchingOnlyPublishesNoDevice(t *testing.T) {
	broker := testenv.Mosquitto(t)
	dir := t.TempDir()
	online := testenv.Subscribe(t, broker, "fusebox/#")
	d := startServe(t, filepath.Join(dir, "state"), writeConfigPath(t, dir, mqttHealthConfig(broker)))
	serve := mqtt.ServeTopic(notify.MQTT{Prefix: "fusebox"}) // the host's instance, as the daemon's
	online.Wait(t, serve, "online")                          // published after the discovery it would have
	// Where discovery would have gone, had the config asked for it.
	asked := notify.MQTT{Prefix: "fusebox", Discovery: "homeassistant"}
	zigbee, plug := mqtt.TopicsOf(asked, "zigbee").Discovery, mqtt.TopicsOf(asked, "plug").Discovery
	for _, topic := range []string{path.Dir(path.Dir(zigbee)) + "/serve/config", zigbee, plug} {
		if got := testenv.Retained(t, broker, topic); got != "" {
			t.Errorf("a config that only watches published discovery at %s: %s", topic, got)
		}
	}
	if got := online.Payloads("fusebox/zigbee/state"); len(got) > 0 {
		t.Errorf("a watched circuit without notify: mqtt: published its state: %q", got)
	}
	d.Signal(t, syscall.SIGTERM)
	if code := d.Wait(t); code != 0 {
		t.Fatalf("serve exited %d: %s", code, d.Stderr)
	}
}
