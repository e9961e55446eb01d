package reliability

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// malformedConfigs are configs with one problem each, with where fusebox
// must say it is: "LINE:COL: KEY: ", KEY absent for YAML syntax errors,
// which are found before any key is.
var malformedConfigs = []struct {
	name    string
	yaml    string
	secrets string // secrets.yaml beside the config, when not ""
	at      string
	msg     string
	// run is the circuit whose `fusebox run` must report the problem: ""
	// when it is in defaults: or elsewhere at the top, "-" when it is in
	// a chain, which no run reads.
	run string
}{
	{"bad YAML", "defaults:\n  attempts: [1, 2\n  backoff: 2s\n", "",
		"3:3: ", "',' or ']' must be specified", ""},
	{"unknown key", "defaults:\n  atempts: 3\n", "",
		"2:3: defaults.atempts: ", "did you mean attempts?", ""},
	{"bad duration", "circuits:\n  z2m:\n    open_for: 3 minutes\n", "",
		"3:15: circuits.z2m.open_for: ", `invalid duration "3 minutes"`, "z2m"},
	{"negative attempts", "defaults:\n  attempts: -1\n", "",
		"2:3: defaults.attempts: ", "must be at least 1, got -1", ""},
	{"chain naming an unknown endpoint", "circuits:\n  owm:\n    http: {url: 'http://127.0.0.1:9/'}\nchains:\n  weather: {endpoints: [owm, wttr]}\n", "",
		"5:30: chains.weather.endpoints: ", "no circuit or chain is named wttr", "-"},
	{"missing secret", "circuits:\n  ha:\n    http:\n      url: http://127.0.0.1:9/\n      headers: {Authorization: !secret ha_token}\n", "other: x\n",
		"5:32: circuits.ha.http.headers.Authorization: ", "!secret ha_token: no key ha_token in ", "ha"},
	{"missing secrets.yaml", "circuits:\n  ha:\n    http:\n      url: http://127.0.0.1:9/\n      headers: {Authorization: !secret ha_token}\n", "",
		"5:32: circuits.ha.http.headers.Authorization: ", "secrets.yaml: no such file or directory", "ha"},
	{"missing environment variable", "circuits:\n  owm:\n    http: {url: 'http://127.0.0.1:9/?appid=${FUSEBOX_TEST_UNSET}'}\n", "",
		"3:17: circuits.owm.http.url: ", "environment variable FUSEBOX_TEST_UNSET is not set", "owm"},
	{"missing file", "circuits:\n  owm:\n    http:\n      url: http://127.0.0.1:9/\n      body: ${file:/nonexistent/body.json}\n", "",
		"5:13: circuits.owm.http.body: ", "cannot read /nonexistent/body.json", "owm"},
	{"chain cycle", "circuits:\n  x: {http: {url: 'http://127.0.0.1:9/'}}\nchains:\n  a: {endpoints: [x, b]}\n  b: {endpoints: [a]}\n", "",
		"5:19: chains.b.endpoints: ", "cycle: a → b → a", "-"},
}

// TestMalformedConfig runs every command that reads the config on each
// malformed config: exit 78 and one line naming the file, line and key;
// nothing is run and nothing is written to the state dir. run of a circuit
// whose part of the config is broken instead says so on one line and runs
// the command under the defaults; run of another circuit, when the problem
// is in another circuit or a chain, runs it under its own policy and says
// nothing.
func TestMalformedConfig(t *testing.T) {
	for _, tc := range malformedConfigs {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.secrets != "" {
				if err := os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte(tc.secrets), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			state := filepath.Join(dir, "state")
			marker := filepath.Join(dir, "ran")
			want := "fusebox: " + path + ":" + tc.at
			// status and trip name the broken circuit when there is one: a
			// value this process cannot have (${VAR}, ${file:}) blocks only
			// what uses that circuit.
			named := []string{}
			if tc.run != "" && tc.run != "-" {
				named = append(named, tc.run)
			}
			for _, args := range [][]string{
				{"validate", "--config", path},
				{"call", "--config", path, "owm"},
				append([]string{"status", "--config", path}, named...),
				{"trip", "--config", path, cmp.Or(strings.Join(named, ""), "x")},
			} {
				p := fb(t, state, args...)
				lines := logLines(p.Stderr)
				if p.Code != 78 || len(lines) != 1 || !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], tc.msg) {
					t.Errorf("fusebox %s: exit %d, stderr:\n%s\nwant exit 78 and one line %q…%q", args[0], p.Code, p.Stderr, want, tc.msg)
				}
				if p.Stdout != "" {
					t.Errorf("fusebox %s: stdout %q", args[0], p.Stdout)
				}
			}
			if got := tree(t, state); got != nil {
				t.Errorf("state dir holds %v, want it never created", got)
			}
			if exists(state) {
				t.Error("the state dir was created")
			}

			if tc.run != "-" {
				name := cmp.Or(tc.run, "x")
				p := fb(t, state, "run", "--log-format", "json", "--config", path, name, "--", "touch", marker)
				lines := logLines(p.Stderr)
				var m map[string]any
				if len(lines) == 1 {
					json.Unmarshal([]byte(lines[0]), &m)
				}
				problem, _ := m["problem"].(string)
				if p.Code != 0 || !exists(marker) || m["level"] != "ERROR" || !strings.HasPrefix(problem, path+":"+tc.at) || !strings.Contains(problem, tc.msg) {
					t.Errorf("fusebox run %s: exit %d, stderr:\n%s\nwant the command run and one ERROR line whose problem is %q…%q", name, p.Code, p.Stderr, path+":"+tc.at, tc.msg)
				}
				os.Remove(marker)
			}
			if tc.run != "" {
				// A circuit of its own, with a policy that shows: run twice
				// with a failing command under trip_after 1, the second is
				// skipped (the defaults would have run it again).
				own := tc.yaml + "\n"
				if strings.Contains(own, "\ncircuits:\n") {
					own = strings.Replace(own, "\ncircuits:\n", "\ncircuits:\n  own:\n    attempts: 1\n    trip_after: 1\n", 1)
				} else {
					own = strings.Replace(own, "circuits:\n", "circuits:\n  own:\n    attempts: 1\n    trip_after: 1\n", 1)
				}
				if err := os.WriteFile(path, []byte(own), 0o600); err != nil {
					t.Fatal(err)
				}
				first := fb(t, state, "run", "--config", path, "own", "--", "false")
				second := fb(t, state, "run", "--config", path, "own", "--", "touch", marker)
				if first.Code != 1 || second.Code != 75 || exists(marker) || second.Stderr != "" {
					t.Errorf("fusebox run own twice: exit %d then %d (stderr %q, %q), want 1 then 75, silent, under its own trip_after 1",
						first.Code, second.Code, first.Stderr, second.Stderr)
				}
			}
		})
	}
}

// TestConfigErrorAboutASecretIsReadable: the error for a missing !secret in
// an Authorization header names what is missing in words.
func TestConfigErrorAboutASecretIsReadable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	yaml := "circuits:\n  ha:\n    http:\n      url: http://127.0.0.1:9/\n      headers: {Authorization: !secret ha_token}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte("other: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := fb(t, filepath.Join(dir, "state"), "validate", "--config", path)
	want := "circuits.ha.http.headers.Authorization: !secret ha_token: no key ha_token in " + filepath.Join(dir, "secrets.yaml")
	if p.Code != 78 || !strings.Contains(p.Stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant 78 and %q", p.Code, p.Stderr, want)
	}
}
