package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// forRunEnv is the Env the run tests parse with: what LoadForRun reads.
func forRunEnv() Env {
	env := testEnv(
		map[string]string{"OWM_API_KEY": "k", "TOKEN": "t"},
		map[string]string{"secrets.yaml": "ha_token: s\n"})
	env.UncheckedJQ = true
	return env
}

// sameForRun reports how what fusebox run of name reads from cut (its
// part of the config) differs from what it reads from full, "" when it
// does not: the top-level keys,
// the defaults, and the circuit as decoded, field by field.
func sameForRun(full, cut *Config, name string) string {
	var diffs []string
	check := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			diffs = append(diffs, what)
		}
	}
	check("state", full.State, cut.State)
	check("fsync", full.Fsync, cut.Fsync)
	check("gc_after", full.GCAfter, cut.GCAfter)
	check("history", full.HistoryKeep, cut.HistoryKeep)
	check("defaults", full.Defaults, cut.Defaults)
	check("defaults notify", full.DefaultNotify, cut.DefaultNotify)
	check("policy", full.Policy(name), cut.Policy(name))
	check("notify", full.Notify(name), cut.Notify(name))
	fe, fok := full.SkipExit(name)
	ce, cok := cut.SkipExit(name)
	check("skip_exit", [2]any{fe, fok}, [2]any{ce, cok})
	check("circuit", full.Circuits[name], cut.Circuits[name]) // every field, the endpoint and where each key was set included
	check("defaults' sources", full.defaultSources, cut.defaultSources)
	for _, s := range cut.Secrets {
		if !strings.Contains(strings.Join(full.Secrets, "\x00"), s) {
			diffs = append(diffs, "a secret the whole file has not")
		}
	}
	return strings.Join(diffs, ", ")
}

// checkForRun: where the whole config parses, the part LoadForRun reads
// parses too, and run reads the same from it.
func checkForRun(t *testing.T, data []byte, name string) {
	t.Helper()
	full, err := Parse("config.yaml", data, forRunEnv())
	if err != nil {
		// A problem elsewhere costs the run nothing; one in what it reads
		// is reported with all the others.
		if _, perr := loadForRun("config.yaml", data, name, forRunEnv()); perr != nil && perr.Error() != err.Error() {
			t.Fatalf("a broken file: run of %s reports %v, not the whole file's %v", name, perr, err)
		}
		return
	}
	part, err := loadForRun("config.yaml", data, name, forRunEnv())
	if err != nil {
		t.Fatalf("the whole file parses, run of %s does not: %v", name, err)
	}
	if !part.Partial {
		t.Errorf("run of %s: not Partial", name)
	}
	if d := sameForRun(full, part, name); d != "" {
		t.Fatalf("run of %s reads a different %s from its part of the config", name, d)
	}
}

func TestRunReadsWhatTheWholeConfigSays(t *testing.T) {
	ref, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml, circuit string
	}{
		{"reference", string(ref), "zigbee2mqtt"},
		{"twenty circuits", twentyCircuits(), "api-7"},
		{"twenty circuits, a job", twentyCircuits(), "job-4"},
		{"a circuit the file does not name", twentyCircuits(), "nas"},
		{"small", smallConfig, "openweather"},
		{"no circuits", "defaults:\n  attempts: 2\n", "x"},
		{"comments and blank lines", "# top\ncircuits:\n  # a\n  a:\n    attempts: 2\n\n  # b\n  b:\n    attempts: 3 # three\n", "b"},
		{"a flow entry", "circuits:\n  a: {attempts: 2}\n  b: {attempts: 3, open_for: 1m}\n", "b"},
		{"a flow value over lines", "circuits:\n  a:\n    http: {url: 'http://h/x',\n      pass_query: true}\n  b:\n    attempts: 4\n", "a"},
		{"a quoted value over lines", "circuits:\n  a:\n    http:\n      url: \"http://h/\n        x\"\n  b: {attempts: 4}\n", "a"},
		{"quotes holding what looks like YAML", "circuits:\n  a:\n    http:\n      url: 'http://h/x?q=[1'\n      extract: \"'{a: .b}' # no comment\"\n  b: {attempts: 2}\n", "b"},
		{"a block scalar", "circuits:\n  a:\n    http:\n      url: http://h/\n      body: |\n        {\"x\": [1,\n        'y\n      extract: .x\n  b: {attempts: 2}\n", "a"},
		{"a tag", "circuits:\n  ha:\n    http:\n      url: http://h/\n      headers: {Authorization: !secret ha_token}\n  b: {attempts: 2}\n", "ha"},
		{"deeper circuits", "circuits:\n    a:\n        attempts: 2\n    b:\n        attempts: 3\n", "a"},
		{"chains dropped", "circuits:\n  a: {http: {url: 'http://h/'}}\nchains:\n  w: {endpoints: [a]}\n", "a"},
		{"an anchor", "defaults: &d\n  attempts: 2\ncircuits:\n  a:\n    attempts: 3\n", "a"},
		{"an alias", "circuits:\n  a: {attempts: 3}\n  b: *x\n", "a"},
		{"a merge key", "circuits:\n  a:\n    <<: {attempts: 3}\n", "a"},
		{"flow circuits", "circuits: {a: {attempts: 2}, b: {attempts: 3}}\n", "a"},
		{"flow circuits over lines", "circuits:\n  {a: {attempts: 2}}\n", "a"},
		{"a tab", "circuits:\n\ta: {attempts: 2}\n", "a"},
		{"CRLF", "circuits:\r\n  a: {attempts: 2}\r\n", "a"},
		{"a document marker", "---\ncircuits:\n  a: {attempts: 2}\n", "a"},
		{"two documents", "circuits:\n  a: {attempts: 2}\n---\ncircuits:\n  a: {attempts: 3}\n", "a"},
		{"a quoted key", "circuits:\n  \"a\": {attempts: 2}\n", "a"},
		{"a repeated circuit", "circuits:\n  a: {attempts: 2}\n  a: {attempts: 3}\n", "a"},
		{"a repeated top-level key", "circuits:\n  a: {attempts: 2}\ncircuits:\n  b: {attempts: 3}\n", "a"},
		{"a quote left open", "circuits:\n  a:\n    http: {url: 'http://h/}\n  b: {attempts: 3}\n", "b"},
		{"a bracket left open", "circuits:\n  a:\n    attempts: [1, 2\n  b: {attempts: 3}\n", "b"},
		{"a key less indented than the first", "circuits:\n    a: {attempts: 2}\n  b: {attempts: 3}\n", "b"},
		{"an explicit key", "circuits:\n  ? a\n  : {attempts: 2}\n", "a"},
		{"a top-level sequence", "- a\n- b\n", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkForRun(t, []byte(tc.yaml), tc.circuit) })
	}
}

// What makes a run of one circuit of twenty cheap: only that circuit is
// decoded.
func TestRunDecodesOnlyItsCircuit(t *testing.T) {
	c, err := loadForRun("config.yaml", []byte(twentyCircuits()), "api-7", forRunEnv())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Circuits) != 1 || c.Circuits["api-7"] == nil || len(c.Chains) != 0 || !c.Partial {
		t.Errorf("circuits %v, chains %v, partial %v: want api-7 alone, no chains, Partial", slices.Sorted(maps.Keys(c.Circuits)), len(c.Chains), c.Partial)
	}
	if c.Circuits["api-7"].Endpoint == nil || c.Circuits["api-7"].Endpoint.URL != "http://127.0.0.1:8007/v1/sensor/7?token=t" {
		t.Errorf("api-7's endpoint = %+v", c.Circuits["api-7"].Endpoint)
	}
}

func TestLoadForRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(yaml string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("a problem in another circuit or a chain costs nothing", func(t *testing.T) {
		write("defaults:\n  attempts: 2\ncircuits:\n  z2m:\n    open_for: 3 minutes\n  nas:\n    attempts: 5\n    skip_exit: 0\nchains:\n  w: {endpoints: [nope]}\n")
		c, err := LoadForRun(path, "nas")
		if err != nil {
			t.Fatal(err)
		}
		if p := c.Policy("nas"); p.Retry.Attempts != 5 {
			t.Errorf("attempts %d, want 5", p.Retry.Attempts)
		}
		if code, ok := c.SkipExit("nas"); !ok || code != 0 {
			t.Errorf("skip_exit %d %v, want 0", code, ok)
		}
		if _, err := Load(path); err == nil {
			t.Error("Load found no problem")
		}
		if !c.Partial {
			t.Error("not Partial")
		}
	})
	t.Run("Secrets reads them all, a problem elsewhere or not", func(t *testing.T) {
		t.Setenv("FUSEBOX_TEST_CUT_SECRET", "env-secret-1")
		write("circuits:\n  a:\n    attempts: 2\n  b:\n    http: {url: 'http://h/?k=${FUSEBOX_TEST_CUT_SECRET}'}\n  c:\n    open_for: x\n")
		c, err := LoadForRun(path, "a")
		if err != nil || !c.Partial || len(c.Secrets) != 0 {
			t.Fatalf("LoadForRun: %v, partial %v, secrets %q", err, c != nil && c.Partial, c.Secrets)
		}
		if got := Secrets(path); !slices.Contains(got, "env-secret-1") {
			t.Errorf("Secrets = %q, want b's", got)
		}
	})
	t.Run("a problem in its own circuit is the whole file's error", func(t *testing.T) {
		write("circuits:\n  z2m:\n    open_for: 3 minutes\n  nas:\n    attempts: 0\n")
		_, err := LoadForRun(path, "z2m")
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "3:15: circuits.z2m.open_for: ") || !strings.Contains(err.Error(), "circuits.nas.attempts") {
			t.Errorf("err = %v, want z2m's problem at 3:15 and nas's", err)
		}
	})
	t.Run("anchors and merge keys are followed, other circuits still unchecked", func(t *testing.T) {
		write("defaults: &d\n  attempts: 2\ncircuits:\n  a:\n    <<: *d\n    open_for: 1m\n  b:\n    open_for: x\n")
		c, err := LoadForRun(path, "a")
		if err != nil || !c.Partial || c.Policy("a").Retry.Attempts != 2 {
			t.Errorf("LoadForRun = %v, %v: want a's attempts 2 from the anchor, Partial", c, err)
		}
	})
	t.Run("a misspelled key of its own circuit is found", func(t *testing.T) {
		write("circuits:\n  a:\n    atempts: 2\n  b:\n    atempts: 3\n")
		_, err := LoadForRun(path, "a")
		if err == nil || !strings.Contains(err.Error(), "circuits.a.atempts") {
			t.Errorf("err = %v, want a's misspelled key", err)
		}
	})
}

// A run skipped because its circuit is open exits with the skip_exit: of
// its own circuit, whatever the rest of the file holds.
func TestSkipExitOfARun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	for _, tc := range []struct {
		name, yaml string
		code       int
		set        bool
	}{
		{"its own", "circuits:\n  a:\n    skip_exit: 0\n  b: {skip_exit: 9}\n", 0, true},
		{"another's only", "circuits:\n  a:\n    attempts: 2\n  b: {skip_exit: 9}\n", 0, false},
		{"none at all", "defaults:\n  attempts: 2\n", 0, false},
		{"spelled with an escape", "circuits:\n  a: {\"skip\\x5fexit\": 3}\n", 3, true},
		{"through an anchor", "x: &e {skip_exit: 4}\ncircuits:\n  a: *e\n", 0, false}, // x: is an unknown key: the config is broken
		{"through a merge key", "circuits:\n  b: &e {skip_exit: 4}\n  a:\n    <<: *e\n", 4, true},
		{"its own part broken", "circuits:\n  a:\n    skip_exit: 3\n    open_for: x\n", 0, false},
		{"another part broken", "circuits:\n  a:\n    skip_exit: 3\n  b:\n    open_for: x\n", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var code int
			var set bool
			if c, err := LoadForRun(path, "a"); err == nil {
				code, set = c.SkipExit("a")
			}
			if code != tc.code || set != tc.set {
				t.Errorf("skip_exit = %d, %v; want %d, %v", code, set, tc.code, tc.set)
			}
		})
	}
	if _, err := LoadForRun(filepath.Join(dir, "missing.yaml"), "a"); err == nil {
		t.Error("a missing config loaded")
	}
}
