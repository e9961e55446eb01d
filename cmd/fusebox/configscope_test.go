package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A ${VAR} set for the daemon's unit and not in the shell where a person
// types fusebox status blocks only what uses it: the commands that read no
// value of that circuit work for every other, validate still reports it
// (78), and run and call of the circuit that uses it behave as for any
// broken part of the config. Run as processes, as the user ran them.
func TestAnUnsetVariableBlocksOnlyTheCircuitUsingIt(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("circuits:\n  ha:\n    http:\n      url: http://127.0.0.1:9/api/states?token=${FUSEBOX_TEST_UNSET_TOKEN}\n  nas:\n    attempts: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	const problem = "config.yaml:4:12: circuits.ha.http.url: ${FUSEBOX_TEST_UNSET_TOKEN}: environment variable FUSEBOX_TEST_UNSET_TOKEN is not set"

	for _, args := range [][]string{
		{"trip", "nas", "--for", "1h"},
		{"status"},
		{"status", "nas"},
		{"history", "nas"},
		{"reset", "nas"},
		{"gc"},
		{"run", "nas", "--", "true"},
	} {
		if p := fbEnv(t, state, env, args...); p.Code != 0 || p.Stderr != "" {
			t.Errorf("fusebox %s: exit %d, stderr %q; want 0 and nothing on stderr", strings.Join(args, " "), p.Code, p.Stderr)
		}
	}
	if p := fbEnv(t, state, env, "status", "--json"); !strings.Contains(p.Stdout, `"ha"`) || !strings.Contains(p.Stdout, `"nas"`) {
		t.Errorf("status --json:\n%s\nwant both circuits listed", p.Stdout)
	}

	for _, args := range [][]string{
		{"validate"},
		{"status", "ha"},
		{"trip", "ha"},
		{"history", "ha"},
		{"call", "ha"},
	} {
		p := fbEnv(t, state, env, args...)
		if p.Code != exitConfig || countLines(p.Stderr, problem) != 1 {
			t.Errorf("fusebox %s: exit %d, stderr %q; want 78 and the line %q", strings.Join(args, " "), p.Code, p.Stderr, problem)
		}
	}
	// run of ha: the config's trouble on one line, the command run under
	// the defaults.
	if p := fbEnv(t, state, env, "run", "ha", "--", "true"); p.Code != 0 || countLines(p.Stderr, "config not used") != 1 || !strings.Contains(p.Stderr, "FUSEBOX_TEST_UNSET_TOKEN is not set") {
		t.Errorf("run ha: exit %d, stderr %q; want 0 and one line about the config", p.Code, p.Stderr)
	}
}
