package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/redirect"
)

func TestParseNotifyMergesDefaultsAndCircuits(t *testing.T) {
	c, err := Parse("/cfg/config.yaml", yaml(`
history: {keep: 90d}
defaults:
  notify:
    after: 10m
    probe_failed: 3
    webhooks:
      - url: https://ntfy.sh/home-alerts
        format: ntfy
      - url: http://gotify.lan/message
        format: gotify
        headers: {X-Gotify-Key: '${GOTIFY}'}
        redirects: any
    mqtt: {broker: 'tcp://127.0.0.1:1883', username: fb, password: '${GOTIFY}', instance: nas.lan}
circuits:
  bridge:
    notify:
      after: 0s
      on_open: [/usr/local/bin/bridge-down, --loud]
      heartbeats:
        - url: https://hc-ping.com/uuid
        - url: http://kuma.lan/api/push/abc
          kind: uptime_kuma
          redirects: none
  quiet:
    attempts: 2
`), testEnv(map[string]string{"GOTIFY": "g-secret"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.HistoryKeep != 90*24*time.Hour {
		t.Errorf("history keep = %s", c.HistoryKeep)
	}
	def := c.Notify("unnamed")
	want := notify.Rules{
		After: 10 * time.Minute, ProbeFailed: 3,
		Webhooks: []notify.Webhook{
			{URL: "https://ntfy.sh/home-alerts", Format: notify.Ntfy},
			{URL: "http://gotify.lan/message", Format: notify.Gotify, Headers: map[string]string{"X-Gotify-Key": "g-secret"}, Redirects: redirect.Any},
		},
		MQTT: &notify.MQTT{Broker: "tcp://127.0.0.1:1883", Username: "fb", Password: "g-secret", Prefix: "fusebox", Discovery: "homeassistant", Instance: "nas.lan"},
	}
	if !reflect.DeepEqual(def, want) {
		t.Errorf("defaults' rules = %+v, want %+v", def, want)
	}
	if q := c.Notify("quiet"); !reflect.DeepEqual(q, want) {
		t.Errorf("a circuit without notify: gets %+v, want the defaults'", q)
	}
	b := c.Notify("bridge")
	want.After = 0
	want.OnOpen = []string{"/usr/local/bin/bridge-down", "--loud"}
	want.Heartbeats = []notify.Heartbeat{{URL: "https://hc-ping.com/uuid", Kind: notify.Healthchecks}, {URL: "http://kuma.lan/api/push/abc", Kind: notify.UptimeKuma, Redirects: redirect.None}}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("bridge's rules = %+v, want %+v", b, want)
	}
	if !contains(c.Secrets, "g-secret") {
		t.Error("a secret in notify: is not redacted")
	}
	var none *Config
	if r := none.Notify("x"); !r.Empty() || none.Policy("x") != (fusebox.Policy{}) {
		t.Error("no config notifies")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestParseMQTTControls(t *testing.T) {
	for _, c := range []struct {
		name, block string
		controls    bool
		tripFor     time.Duration
	}{
		{"off by default", `{broker: 'tcp://127.0.0.1:1883'}`, false, time.Hour},
		{"on, trip for the default hour", `{broker: 'tcp://127.0.0.1:1883', controls: true}`, true, time.Hour},
		{"on, trip for 20m", `{broker: 'tcp://127.0.0.1:1883', controls: true, controls_trip_for: 20m}`, true, 20 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("/cfg/config.yaml", yaml("defaults:\n  notify:\n    mqtt: "+c.block+"\n"), testEnv(nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			m := cfg.Notify("x").MQTT
			if m.Controls != c.controls || m.TripFor() != c.tripFor {
				t.Errorf("controls %v, trip for %s; want %v, %s", m.Controls, m.TripFor(), c.controls, c.tripFor)
			}
		})
	}
	for _, bad := range []string{"controls: maybe", "controls_trip_for: 0s", "controls_trip_for: soon", "control: true"} {
		_, err := Parse("/cfg/config.yaml", yaml("defaults:\n  notify:\n    mqtt: {broker: 'tcp://127.0.0.1:1883', "+bad+"}\n"), testEnv(nil, nil))
		if err == nil || !strings.Contains(err.Error(), "config.yaml:3") {
			t.Errorf("%s: err %v, want one naming config.yaml:3", bad, err)
		}
	}
}
