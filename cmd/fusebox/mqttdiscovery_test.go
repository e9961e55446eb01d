package main

import (
	"path"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/notify/mqtt"
)

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
