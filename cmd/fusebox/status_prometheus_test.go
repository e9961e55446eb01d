package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusWritesANodeExporterTextfile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	inproc(t, state, "run", "--backoff", "1ms", "bridge", "--", "false")
	inproc(t, state, "run", "bridge", "--", "true") // skipped
	inproc(t, state, "run", "nas", "--", "true")
	out := filepath.Join(dir, "textfile", "fusebox.prom")
	os.Mkdir(filepath.Dir(out), 0o755)
	os.WriteFile(out, []byte("old"), 0o644)
	if p := inproc(t, state, "status", "--format", "prometheus", "--output", out); p.code != 0 || p.stdout != "" {
		t.Fatalf("status --format prometheus --output: exit %d, stdout %q, %s", p.code, p.stdout, p.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fusebox_circuitbreaker_state{name="bridge",state="open"} 1`,
		`fusebox_circuitbreaker_state{name="nas",state="closed"} 1`,
		`fusebox_failures_total{name="bridge"} 3`,
		`fusebox_skips_total{name="bridge"} 1`,
		`fusebox_successes_total{name="nas"} 1`,
	} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("textfile lacks %s:\n%s", want, b)
		}
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode %v, want 0644 for the collector", fi.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if p := inproc(t, state, "status", "--format", "prometheus"); !strings.Contains(p.stdout, "# TYPE fusebox_calls_total counter") {
		t.Errorf("to stdout:\n%s", p.stdout)
	}
	for _, args := range [][]string{{"--format", "yaml"}, {"--json", "--format", "prometheus"}} {
		if p := inproc(t, state, append([]string{"status"}, args...)...); p.code != exitUsage {
			t.Errorf("status %v: exit %d, want %d", args, p.code, exitUsage)
		}
	}
	if p := inproc(t, state, "status", "--output", filepath.Join(dir, "no", "such", "dir", "f")); p.code == 0 {
		t.Error("writing into a missing dir succeeded")
	}
}
