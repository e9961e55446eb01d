package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox"
)

// tableBlocks are the key table's blocks by their names in keyTable.
func tableBlocks() map[string]*block {
	k := table()
	return map[string]*block{
		"top": k.top, "history": k.history, "topMQTT": k.topMQTT, "policy": k.policy,
		"retryBudget": k.retryBudget, "failureRate": k.failureRate, "defaults": k.defaults,
		"circuit": k.circuit, "circuitHealth": k.circuitHealth, "watch": k.watch, "chain": k.chain,
		"http": k.http, "expect": k.expect, "httpHealth": k.httpHealth, "notify": k.notify,
		"webhook": k.webhook, "heartbeat": k.heartbeat, "notifyMQTT": k.notifyMQTT,
	}
}

// TestEveryKeyDecodes: each key of the table says how it is decoded, what
// it needs beside it is a key of its block, and each block is one the top
// block leads to, so that the table is the whole of the loader.
func TestEveryKeyDecodes(t *testing.T) {
	reached := map[*block]bool{}
	var walk func(b *block)
	walk = func(b *block) {
		if reached[b] {
			return
		}
		reached[b] = true
		for _, k := range b.keys {
			for _, sub := range []*block{k.block, k.each, k.items} {
				if sub != nil {
					walk(sub)
				}
			}
		}
	}
	walk(table().top)
	for name, b := range tableBlocks() {
		if !reached[b] && b != table().policy { // policy: the keys defaults and circuits share
			t.Errorf("table().%s is in no block the config's top leads to", name)
		}
		for _, k := range b.keys {
			switch {
			case k.decode == nil:
				t.Errorf("table().%s: key %s has no decode", name, k.name)
			case k.needs != "" && (b.key(k.needs) == nil || k.alone == ""):
				t.Errorf("table().%s: key %s needs %q, which is no key of its block or has no message", name, k.name, k.needs)
			}
		}
		for m := range b.misplaced {
			if b.key(m) != nil {
				t.Errorf("table().%s: %s is a key of the block and misplaced in it", name, m)
			}
		}
	}
}

// TestEveryKeyIsInTheSchema: the JSON Schema editors check a config with
// has every key of the table, at its place.
func TestEveryKeyIsInTheSchema(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(JSONSchema(), &root); err != nil {
		t.Fatal(err)
	}
	var walk func(b *block, s map[string]any, path string)
	walk = func(b *block, s map[string]any, path string) {
		props, _ := s["properties"].(map[string]any)
		for _, k := range b.keys {
			at := join(path, k.name)
			p, ok := props[k.name].(map[string]any)
			if !ok {
				t.Errorf("the schema lacks %s", at)
				continue
			}
			for _, sub := range []*block{k.block, k.each, k.items} {
				if sub == nil {
					continue
				}
				if m := mappingIn(p); m == nil {
					t.Errorf("the schema of %s has no mapping of keys", at)
				} else {
					walk(sub, m, at)
				}
			}
		}
	}
	walk(table().top, root, "")
}

// mappingIn returns the schema of a mapping of keys within s: s itself,
// one of its anyOf, its additionalProperties (a mapping of names) or its
// items (a list).
func mappingIn(s map[string]any) map[string]any {
	if _, ok := s["properties"]; ok {
		return s
	}
	alts, _ := s["anyOf"].([]any)
	for _, alt := range append(alts, s["additionalProperties"], s["items"]) {
		if m, ok := alt.(map[string]any); ok {
			if found := mappingIn(m); found != nil {
				return found
			}
		}
	}
	return nil
}

// TestSourcedKeysHaveSources: where each sourced key of a circuit or chain
// is set is what PolicySource and ChainSource return (explain shows it).
func TestSourcedKeysHaveSources(t *testing.T) {
	env := testEnv(map[string]string{"MQTT_PASSWORD": "pw", "NTFY_TOKEN": "tk"}, map[string]string{"ha_token": "t\n"})
	cfg := exampleConfig(t, table().top, "", false)
	for _, c := range cfg["circuits"].(map[string]any) {
		delete(c.(map[string]any), "timeout") // its http: block sets it
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse("config.yaml", data, env)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, k := range table().circuit.keys {
		switch {
		case !k.sourced:
		case k.block != nil:
			for _, sub := range k.block.keys {
				want = append(want, k.name+"."+sub.name)
			}
			fallthrough
		default:
			want = append(want, k.name)
		}
	}
	for _, key := range want {
		s, ok := c.PolicySource("api", key)
		if at := strings.TrimPrefix(s.Key, "circuits.api."); !ok || s.Line == 0 || at != key && at != "http."+key { // the example sets timeout in http:
			t.Errorf("PolicySource(api, %s) = %+v, %v", key, s, ok)
		}
		if _, ok := c.PolicySource("not-in-config", key); key != "skip_exit" && !ok {
			t.Errorf("PolicySource of a circuit the config lacks has no %s of defaults:", key)
		}
	}
	for _, k := range table().chain.keys {
		if s, ok := c.ChainSource("weather", k.name); k.sourced && (!ok || s.Key != "chains.weather."+k.name) {
			t.Errorf("ChainSource(weather, %s) = %+v, %v", k.name, s, ok)
		}
	}
}

// exampleConfig is a config setting every key of the table to its example,
// each mapping in its long form (scalars: false) or, where a key takes a
// scalar too (retry_budget: 20%), in that.
func exampleConfig(t *testing.T, b *block, path string, scalars bool) map[string]any {
	m := map[string]any{}
	for _, k := range b.keys {
		at := join(path, k.name)
		switch {
		case k.is != nil && k.example == nil:
			t.Errorf("%s has no example in keytable.go", at)
		case k.block != nil && (k.is == nil || !scalars):
			m[k.name] = exampleConfig(t, k.block, at, scalars)
		case k.each != nil:
			entries := map[string]any{}
			for _, name := range k.example.([]string) {
				entries[name] = exampleConfig(t, k.each, join(at, name), scalars)
			}
			m[k.name] = entries
		case k.items != nil:
			m[k.name] = []any{exampleConfig(t, k.items, at+"[0]", scalars)}
		default:
			m[k.name] = k.example
		}
	}
	return m
}

// TestKeyTableExamplesParse: a config that sets every key of the table, to
// its example, is what Parse reads without a problem, and what the schema
// takes. So every key of the table is one the loader reads.
func TestKeyTableExamplesParse(t *testing.T) {
	env := testEnv(map[string]string{"MQTT_PASSWORD": "pw", "NTFY_TOKEN": "tk"}, map[string]string{"ha_token": "t\n"})
	for _, scalars := range []bool{false, true} {
		cfg := exampleConfig(t, table().top, "", scalars)
		for _, c := range cfg["circuits"].(map[string]any) {
			delete(c.(map[string]any), "timeout") // its http: block sets it: set once
		}
		data, err := json.MarshalIndent(cfg, "", "  ") // JSON is YAML
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("config.yaml", data, env); err != nil {
			t.Errorf("the table's examples (scalar forms %v) do not parse:\n%v\n%s", scalars, err, data)
		}
		if err := checkSchema(t, data); err != nil {
			t.Errorf("the table's examples (scalar forms %v) do not match the schema:\n%v", scalars, err)
		}
	}
}

// TestEveryKeyIsDescribed: an editor shows what each key means.
func TestEveryKeyIsDescribed(t *testing.T) {
	for name, b := range tableBlocks() {
		for _, k := range b.keys {
			if k.schema().Description == "" {
				t.Errorf("table().%s: key %s has no doc in keytable.go", name, k.name)
			}
		}
	}
}

// TestJitterEnumIsTheDomains: the jitters the schema offers (and
// ParseJitter takes) are those fusebox.Policy.Validate accepts (the other
// enums are the loader's own lists).
func TestJitterEnumIsTheDomains(t *testing.T) {
	for _, k := range table().policy.keys {
		if k.name != "jitter" {
			continue
		}
		for _, j := range k.is().Enum {
			p := fusebox.Policy{Retry: fusebox.RetryPolicy{Backoff: fusebox.Backoff{Jitter: fusebox.Jitter(j.(string))}}}
			if err := p.Validate(); err != nil {
				t.Errorf("the schema offers jitter %q: %v", j, err)
			}
		}
		if len(k.is().Enum) != 4 {
			t.Errorf("the schema offers %d jitters, want the 4 fusebox.Jitter kinds", len(k.is().Enum))
		}
	}
}
