package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/notify"
)

func TestParseMQTTHealthSharesTheTopLevelBroker(t *testing.T) {
	c, err := Parse("/cfg/config.yaml", yaml(`
mqtt: {broker: 'tcp://127.0.0.1:1883', username: fb, password: !secret mqtt_password}
defaults:
  notify:
    mqtt: {instance: nas}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state == "online"'}
  other:
    notify:
      mqtt: {broker: 'tcp://10.0.0.2:1883'}
`), testEnv(nil, map[string]string{"/cfg/secrets.yaml": "mqtt_password: s3cret\n"}))
	if err != nil {
		t.Fatal(err)
	}
	inherited := notify.MQTT{Broker: "tcp://127.0.0.1:1883", Username: "fb", Password: "s3cret", Prefix: "fusebox", Discovery: "homeassistant", Instance: "nas"}
	if got := c.Notify("zigbee").MQTT; got == nil || *got != inherited {
		t.Errorf("notify mqtt without a broker = %+v, want the top-level broker and credentials: %+v", got, inherited)
	}
	own := notify.MQTT{Broker: "tcp://10.0.0.2:1883", Prefix: "fusebox", Discovery: "homeassistant"}
	if got := c.Notify("other").MQTT; got == nil || *got != own {
		t.Errorf("notify mqtt with its own broker = %+v, want its own, without the top-level credentials: %+v", got, own)
	}
	ws := c.Watches()
	if len(ws) != 1 {
		t.Fatalf("watches = %+v, want zigbee's", ws)
	}
	w := ws[0]
	if w.Circuit != "zigbee" || w.Topic != "zigbee2mqtt/bridge/state" || w.Up.String() != `.state == "online"` || w.Broker != inherited {
		t.Errorf("watch = %+v, want zigbee's topic and up on the notify connection %+v", w, inherited)
	}
	if w.Settle != notify.DefaultWatchSettle {
		t.Errorf("settle = %s, want the default %s", w.Settle, notify.DefaultWatchSettle)
	}
	if src, ok := c.PolicySource("zigbee", "health.mqtt.up"); !ok || src.Line != 8 || src.Key != "circuits.zigbee.health.mqtt.up" {
		t.Errorf("watch source = %+v, %v; want line 8", src, ok)
	}
	if !reflect.DeepEqual(c.Secrets, []string{"s3cret"}) {
		t.Errorf("secrets = %q, want the top-level password", c.Secrets)
	}
}

func TestParseMQTTHealthErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"bad jq names the line", `
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state =='}
`, "config.yaml:5:"},
		{"no top-level broker", `
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: 'true'}
`, "needs a top-level mqtt: block"},
		{"bad settle names the key", `
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: 'true', settle: soon}
`, "circuits.zigbee.health.mqtt.settle"},
		{"wildcard topic", `
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/+/state, up: 'true'}
`, "without + or #"},
		{"no up", `
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state}
`, "up is required"},
		{"an http health check at the circuit", `
circuits:
  zigbee:
    health: {path: /health}
`, "goes in the circuit's http: block"},
		{"top-level mqtt without a broker", `
mqtt: {username: fb}
`, "broker is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/cfg/config.yaml", yaml(tc.yaml), testEnv(nil, nil))
			errs := configErrors(t, err)
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
}

func TestParseMQTTHealthSettle(t *testing.T) {
	c, err := Parse("/cfg/config.yaml", yaml(`
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state == "online"', settle: 0s}
  plug:
    health:
      mqtt: {topic: home/plug/availability, up: '. == "online"', settle: 30s}
`), testEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Watch("zigbee").Settle; got != 0 {
		t.Errorf("settle: 0s = %s, want 0 (each verdict at once)", got)
	}
	if got := c.Watch("plug").Settle; got != 30*time.Second {
		t.Errorf("settle: 30s = %s", got)
	}
}

// A config that only watches (no notify: mqtt: names its broker) asked for
// no Home Assistant device: the watch's connection publishes no discovery.
func TestParseMQTTHealthAloneAsksForNoDiscovery(t *testing.T) {
	c, err := Parse("/cfg/config.yaml", yaml(`
mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: 'true'}
`), testEnv(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := notify.MQTT{Broker: "tcp://127.0.0.1:1883", Prefix: "fusebox"}
	if ws := c.Watches(); len(ws) != 1 || ws[0].Broker != want {
		t.Errorf("watches = %+v, want one on %+v (no discovery)", ws, want)
	}
	if m := c.Notify("zigbee").MQTT; m != nil {
		t.Errorf("notify mqtt = %+v, want none", m)
	}
}
