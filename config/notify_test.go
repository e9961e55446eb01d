package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/spec"
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
	want := spec.Rules{
		After: 10 * time.Minute, ProbeFailed: 3,
		Webhooks: []spec.Webhook{
			{URL: "https://ntfy.sh/home-alerts", Format: spec.Ntfy},
			{URL: "http://gotify.lan/message", Format: spec.Gotify, Headers: map[string]string{"X-Gotify-Key": "g-secret"}, Redirects: spec.RedirectsAny},
		},
		MQTT: &spec.MQTT{Broker: "tcp://127.0.0.1:1883", Username: "fb", Password: "g-secret", Prefix: "fusebox", Discovery: "homeassistant", Instance: "nas.lan"},
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
	want.Heartbeats = []spec.Heartbeat{{URL: "https://hc-ping.com/uuid", Kind: spec.Healthchecks}, {URL: "http://kuma.lan/api/push/abc", Kind: spec.UptimeKuma, Redirects: spec.RedirectsNone}}
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
