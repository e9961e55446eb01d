package config

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	ref, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ref)
	f.Add([]byte("circuits:\n  a: &a {http: {url: https://x, <<: *a}}\n"))
	f.Add([]byte("defaults: &d\n  <<: [*d, *d]\n"))
	f.Add([]byte("chains:\n  a: {endpoints: [b]}\n  b: {endpoints: [a]}\n"))
	f.Add([]byte("state: !secret dir\ngc_after: 1.5d\n"))
	f.Add([]byte("state: redis://u:${X}@nas.lan:6379/0\n"))
	f.Add([]byte("state: rediss://:pw@[::1]:6380\n"))
	f.Add([]byte("defaults: {failure_rate: {threshold: 50%, window: 2, min_attempts: 3}, open_for: 1h, open_max: 1m}\n"))
	f.Add([]byte("history: {keep: 90d}\ndefaults:\n  notify: {after: 10m, probe_failed: 2, webhooks: [{url: https://n/t, format: ntfy}], on_open: [/bin/x], mqtt: {broker: 'tcp://h:1883'}}\ncircuits:\n  a: {notify: {heartbeats: [{url: https://hc/x, kind: uptime_kuma}]}}\n"))
	for _, tt := range malformed {
		f.Add([]byte(tt.yaml))
	}
	env := testEnv(
		map[string]string{"OWM_API_KEY": "k", "X": "x"},
		map[string]string{"/run/secrets/ha_token": "t\n", "secrets.yaml": "ha_token: s\ndir: /d\n"})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("config.yaml", data, env)
		if err != nil {
			if c != nil {
				t.Error("a config and an error")
			}
			for _, e := range configErrors(t, err) {
				if e.File != "config.yaml" && e.File != "secrets.yaml" {
					t.Errorf("error in file %q", e.File)
				}
			}
			return
		}
		checkValid(t, c)
	})
}

// checkValid checks what every config Parse accepts must satisfy.
func checkValid(t *testing.T, c *Config) {
	if err := c.Defaults.Validate(); err != nil {
		t.Errorf("defaults accepted but invalid: %v", err)
	}
	for name, circ := range c.Circuits {
		if err := circ.Policy.Validate(); err != nil {
			t.Errorf("circuit %s accepted but invalid: %v", name, err)
		}
		if ep := circ.Endpoint; ep != nil {
			u, err := url.Parse(ep.URL)
			if err != nil || u.Host == "" || ep.MaxBody <= 0 || ep.Name != name || ep.Policy != circ.Policy {
				t.Errorf("circuit %s: bad endpoint %+v", name, ep)
			}
		}
	}
	for name, ch := range c.Chains {
		if len(ch.Endpoints) == 0 {
			t.Errorf("chain %s is empty", name)
		}
		for _, ep := range ch.Endpoints {
			if circ := c.Circuits[ep]; circ == nil || circ.Endpoint == nil {
				t.Errorf("chain %s names %s, not an endpoint", name, ep)
			}
		}
	}
	for _, s := range c.Secrets {
		if s == "" {
			t.Error("empty secret")
		}
	}
	if strings.HasPrefix(c.State, "redis://") || strings.HasPrefix(c.State, "rediss://") {
		u, err := url.Parse(c.State)
		if err != nil || u.Host == "" {
			t.Errorf("state %q accepted: not a redis URL with a host", c.State)
		} else if p, _ := u.User.Password(); p != "" && !slices.Contains(c.Secrets, p) {
			t.Errorf("state %q: its password is not among the secrets %q", c.State, c.Secrets)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${X}", "$$", "$${X}", "a$", "${file:/f}", "${X", "${}", "${file:}", "$$$", "$x${X}$$"} {
		f.Add(s)
	}
	env := testEnv(map[string]string{"X": "x$"}, map[string]string{"/f": "f\n"})
	f.Fuzz(func(t *testing.T, s string) {
		out, values, errs := expand(s, env.Lookup, env.ReadFile)
		if !strings.Contains(s, "$") && (out != s || values != nil || errs != nil) {
			t.Errorf("expand(%q) = %q, %q, %v; want it unchanged", s, out, values, errs)
		}
		if errs == nil && len(out) > len(s)+len(values)*2 {
			t.Errorf("expand(%q) = %q: longer than its values explain", s, out)
		}
		// Doubling every $ makes any text come out as it was.
		escaped := strings.ReplaceAll(s, "$", "$$")
		if out, values, errs := expand(escaped, env.Lookup, env.ReadFile); out != s || values != nil || errs != nil {
			t.Errorf("expand(%q) = %q, %q, %v; want %q", escaped, out, values, errs, s)
		}
	})
}
