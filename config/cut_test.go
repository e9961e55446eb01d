package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// forRunEnv is the Env the cut tests parse with: what LoadForRun reads.
func forRunEnv() Env {
	env := testEnv(
		map[string]string{"OWM_API_KEY": "k", "TOKEN": "t"},
		map[string]string{"secrets.yaml": "ha_token: s\n"})
	env.UncheckedJQ = true
	return env
}

// sameForRun reports how what fusebox run of name reads from cut differs
// from what it reads from full, "" when it does not: the top-level keys,
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

// checkCut: where cutToCircuit cuts a config that parses whole, the part
// parses too, every line keeps its number, and run reads the same from it.
func checkCut(t *testing.T, data []byte, name string) (cut bool) {
	t.Helper()
	part, ok := cutToCircuit(data, name)
	if !ok {
		return false
	}
	if got, want := strings.Count(string(part), "\n"), strings.Count(string(data), "\n"); got != want {
		t.Fatalf("the cut has %d lines, the file %d", got, want)
	}
	full, err := Parse("config.yaml", data, forRunEnv())
	if err != nil {
		return true // what a broken file's cut gives is LoadForRun's fallback's to judge
	}
	c, err := Parse("config.yaml", part, forRunEnv())
	if err != nil {
		t.Fatalf("the whole file parses, its cut for %s does not: %v\ncut:\n%s", name, err, part)
	}
	if d := sameForRun(full, c, name); d != "" {
		t.Fatalf("run of %s reads a different %s from the cut:\n%s", name, d, part)
	}
	return true
}

func TestCutToCircuit(t *testing.T) {
	ref, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, yaml, circuit string
		cut                 bool
	}{
		{"reference", string(ref), "zigbee2mqtt", true},
		{"twenty circuits", twentyCircuits(), "api-7", true},
		{"twenty circuits, a job", twentyCircuits(), "job-4", true},
		{"a circuit the file does not name", twentyCircuits(), "nas", true},
		{"small", smallConfig, "openweather", true},
		{"no circuits", "defaults:\n  attempts: 2\n", "x", true},
		{"comments and blank lines", "# top\ncircuits:\n  # a\n  a:\n    attempts: 2\n\n  # b\n  b:\n    attempts: 3 # three\n", "b", true},
		{"a flow entry", "circuits:\n  a: {attempts: 2}\n  b: {attempts: 3, open_for: 1m}\n", "b", true},
		{"a flow value over lines", "circuits:\n  a:\n    http: {url: 'http://h/x',\n      pass_query: true}\n  b:\n    attempts: 4\n", "a", true},
		{"a quoted value over lines", "circuits:\n  a:\n    http:\n      url: \"http://h/\n        x\"\n  b: {attempts: 4}\n", "a", true},
		{"quotes holding what looks like YAML", "circuits:\n  a:\n    http:\n      url: 'http://h/x?q=[1'\n      extract: \"'{a: .b}' # no comment\"\n  b: {attempts: 2}\n", "b", true},
		{"a block scalar", "circuits:\n  a:\n    http:\n      url: http://h/\n      body: |\n        {\"x\": [1,\n        'y\n      extract: .x\n  b: {attempts: 2}\n", "a", true},
		{"a tag", "circuits:\n  ha:\n    http:\n      url: http://h/\n      headers: {Authorization: !secret ha_token}\n  b: {attempts: 2}\n", "ha", true},
		{"deeper circuits", "circuits:\n    a:\n        attempts: 2\n    b:\n        attempts: 3\n", "a", true},
		{"chains dropped", "circuits:\n  a: {http: {url: 'http://h/'}}\nchains:\n  w: {endpoints: [a]}\n", "a", true},
		{"an anchor", "defaults: &d\n  attempts: 2\ncircuits:\n  a:\n    attempts: 3\n", "a", false},
		{"an alias", "circuits:\n  a: {attempts: 3}\n  b: *x\n", "a", false},
		{"a merge key", "circuits:\n  a:\n    <<: {attempts: 3}\n", "a", false},
		{"flow circuits", "circuits: {a: {attempts: 2}, b: {attempts: 3}}\n", "a", false},
		{"flow circuits over lines", "circuits:\n  {a: {attempts: 2}}\n", "a", false},
		{"a tab", "circuits:\n\ta: {attempts: 2}\n", "a", false},
		{"CRLF", "circuits:\r\n  a: {attempts: 2}\r\n", "a", false},
		{"a document marker", "---\ncircuits:\n  a: {attempts: 2}\n", "a", false},
		{"two documents", "circuits:\n  a: {attempts: 2}\n---\ncircuits:\n  a: {attempts: 3}\n", "a", false},
		{"a quoted key", "circuits:\n  \"a\": {attempts: 2}\n", "a", false},
		{"a repeated circuit", "circuits:\n  a: {attempts: 2}\n  a: {attempts: 3}\n", "a", false},
		{"a repeated top-level key", "circuits:\n  a: {attempts: 2}\ncircuits:\n  b: {attempts: 3}\n", "a", false},
		{"a quote left open", "circuits:\n  a:\n    http: {url: 'http://h/}\n  b: {attempts: 3}\n", "b", false},
		{"a bracket left open", "circuits:\n  a:\n    attempts: [1, 2\n  b: {attempts: 3}\n", "b", false},
		{"a key less indented than the first", "circuits:\n    a: {attempts: 2}\n  b: {attempts: 3}\n", "b", false},
		{"an explicit key", "circuits:\n  ? a\n  : {attempts: 2}\n", "a", false},
		{"a top-level sequence", "- a\n- b\n", "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkCut(t, []byte(tc.yaml), tc.circuit); got != tc.cut {
				t.Errorf("cut: %v, want %v", got, tc.cut)
			}
		})
	}
}

// The cut is what makes a run of one circuit of twenty cheap: the part the
// parser reads is the top of the file and that circuit.
func TestCutKeepsOnlyTheCircuit(t *testing.T) {
	part, ok := cutToCircuit([]byte(twentyCircuits()), "api-7")
	if !ok {
		t.Fatal("not cut")
	}
	var kept []string
	for l := range strings.Lines(string(part)) {
		if l != "\n" {
			kept = append(kept, l)
		}
	}
	want := "defaults:\n  attempts: 3\n  timeout: 10s\ncircuits:\n  api-7:\n    http:\n" +
		"      url: http://127.0.0.1:8007/v1/sensor/7?token=${TOKEN}\n      headers: {Accept: application/json}\n" +
		"      expect: {status: [200], jq: '.ok == true and (.items | length) > 0'}\n      extract: '.items[0].value'\n"
	if got := strings.Join(kept, ""); got != want {
		t.Errorf("the cut holds:\n%s\nwant:\n%s", got, want)
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
	t.Run("a file it cannot cut is read whole", func(t *testing.T) {
		write("defaults: &d\n  attempts: 2\ncircuits:\n  a:\n    attempts: 4\n  b:\n    open_for: x\n")
		if _, err := LoadForRun(path, "a"); err == nil || !strings.Contains(err.Error(), "circuits.b.open_for") {
			t.Errorf("err = %v, want b's problem", err)
		}
		write("defaults: &d\n  attempts: 2\ncircuits:\n  a:\n    attempts: 4\n")
		if c, err := LoadForRun(path, "a"); err != nil || c.Partial || c.Policy("a").Retry.Attempts != 4 {
			t.Errorf("LoadForRun = %v, %v: want the whole file read, not Partial", c, err)
		}
	})
}

// FuzzCutToCircuit: whatever the file, a cut keeps every line's number,
// when the whole file parses, run reads from the cut exactly what it reads
// from the whole, and the skip_exit a skipped run finds without parsing is
// the one parsing gives.
func FuzzCutToCircuit(f *testing.F) {
	ref, err := os.ReadFile("testdata/reference.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(ref), "zigbee2mqtt")
	f.Add(twentyCircuits(), "api-3")
	f.Add(smallConfig, "openweather")
	f.Add("circuits:\n  a:\n    http: {url: 'http://h/x',\n      pass_query: true}\n  b:\n    attempts: 4\n", "b")
	f.Add("circuits:\n  a:\n    http:\n      url: http://h/\n      body: |\n        {\"x\": [1,\n      extract: .x\n  b: {attempts: 2}\n", "b")
	f.Add("circuits:\n  a:\n    note: \"x\n  b: {attempts: 2}\"\n  b: {attempts: 3}\n", "b")
	f.Add("circuits:\n  a: {attempts: 2} # c\n  'b': {attempts: 3}\n", "b")
	for _, tt := range malformed {
		f.Add(tt.yaml, "x")
	}
	f.Fuzz(func(t *testing.T, data, name string) {
		checkCut(t, []byte(data), name)
		// skip_exit found without parsing is skip_exit parsed.
		var want int
		var wantSet bool
		if c, err := loadForRun("config.yaml", []byte(data), name, forRunEnv()); err == nil {
			want, wantSet = c.SkipExit(name)
		}
		if got, set := skipExitForRun("config.yaml", []byte(data), name, forRunEnv()); got != want || set != wantSet {
			t.Errorf("skipExitForRun = %d, %v; parsed: %d, %v", got, set, want, wantSet)
		}
	})
}

func TestSkipExitForRun(t *testing.T) {
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
			if code, set := SkipExitForRun(path, "a"); code != tc.code || set != tc.set {
				t.Errorf("SkipExitForRun = %d, %v; want %d, %v", code, set, tc.code, tc.set)
			}
		})
	}
	if code, set := SkipExitForRun(filepath.Join(dir, "missing.yaml"), "a"); set {
		t.Errorf("a missing config: %d, %v", code, set)
	}
}
