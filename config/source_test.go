package config

import "testing"

func TestPolicySourceSaysWhereAValueWasSet(t *testing.T) {
	cfg, err := Parse("/etc/fusebox/config.yaml", []byte(`defaults:
  attempts: 2
  open_for: 1m
circuits:
  bridge:
    open_for: 3m
    skip_exit: 99
    failure_rate: {threshold: 50%, window: 20}
`), Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key string
		line      int
		path      string
	}{
		{"bridge", "attempts", 2, "defaults.attempts"},
		{"bridge", "open_for", 6, "circuits.bridge.open_for"},
		{"bridge", "skip_exit", 7, "circuits.bridge.skip_exit"},
		{"bridge", "failure_rate.window", 8, "circuits.bridge.failure_rate.window"},
		{"other", "open_for", 3, "defaults.open_for"},
		{"bridge", "backoff", 0, ""},
	} {
		s, ok := cfg.PolicySource(c.name, c.key)
		if ok != (c.line != 0) || s.Line != c.line || s.Key != c.path || ok && s.File != "/etc/fusebox/config.yaml" {
			t.Errorf("%s %s: %+v %v; want line %d %q", c.name, c.key, s, ok, c.line, c.path)
		}
	}
	var none *Config
	if _, ok := none.PolicySource("x", "attempts"); ok {
		t.Error("no config sets a value")
	}
}
