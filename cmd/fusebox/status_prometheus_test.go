package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
	if p := inproc(t, state, "status", "--format", "prometheus", "--output", out); p.Code != 0 || p.Stdout != "" {
		t.Fatalf("status --format prometheus --output: exit %d, stdout %q, %s", p.Code, p.Stdout, p.Stderr)
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
	if p := inproc(t, state, "status", "--format", "prometheus"); !strings.Contains(p.Stdout, "# TYPE fusebox_attempts_total counter") {
		t.Errorf("to stdout:\n%s", p.Stdout)
	}
	for _, args := range [][]string{{"--format", "yaml"}, {"--json", "--format", "prometheus"}} {
		if p := inproc(t, state, append([]string{"status"}, args...)...); p.Code != exitUsage {
			t.Errorf("status %v: exit %d, want %d", args, p.Code, exitUsage)
		}
	}
	if p := inproc(t, state, "status", "--output", filepath.Join(dir, "no", "such", "dir", "f")); p.Code == 0 {
		t.Error("writing into a missing dir succeeded")
	}
}

// status --format prometheus and the daemon's /metrics, on one state dir,
// give every family they share the same name, type, labels and values, so
// that one dashboard reads either.
func TestStatusAndTheDaemonWriteTheSameFamilies(t *testing.T) {
	up := newFlaky(t)
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, oneEndpointConfig("api", up.URL))
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	inprocEnv(t, state, env, "call", "api")
	up.down.Store(true)
	inprocEnv(t, state, env, "call", "api") // opens the circuit
	inproc(t, state, "run", "nas", "--", "true")

	d := startServe(t, state, cfg)
	_, _, scraped := d.Get(t, "/metrics")
	p := inprocEnv(t, state, env, "status", "--format", "prometheus")
	if p.Code != 0 {
		t.Fatalf("status --format prometheus: exit %d: %s", p.Code, p.Stderr)
	}
	parse := func(what, text string) map[string]*dto.MetricFamily {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s is not the text format: %v\n%s", what, err, text)
		}
		return fams
	}
	daemon, cli := parse("/metrics", scraped), parse("status --format prometheus", p.Stdout)
	for name, f := range cli {
		g, ok := daemon[name]
		if !ok {
			t.Errorf("%s is in status --format prometheus and not in /metrics", name)
			continue
		}
		if f.GetType() != g.GetType() {
			t.Errorf("%s: a %s in status, a %s in /metrics", name, f.GetType(), g.GetType())
		}
		if a, b := samples(f), samples(g); a != b {
			t.Errorf("%s differs:\nstatus:   %s\n/metrics: %s", name, a, b)
		}
	}
	for _, name := range []string{"fusebox_attempts_total", "fusebox_circuitbreaker_state", "fusebox_state_store_up", "fusebox_last_success_timestamp_seconds"} {
		if cli[name] == nil {
			t.Errorf("status --format prometheus lacks %s", name)
		}
	}
}

// samples writes a family's samples one per line, labels sorted.
func samples(f *dto.MetricFamily) string {
	var b strings.Builder
	for _, m := range f.Metric {
		for _, l := range m.Label {
			b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
		}
		switch {
		case m.Counter != nil:
			b.WriteString(" " + model.SampleValue(m.Counter.GetValue()).String())
		case m.Gauge != nil:
			b.WriteString(" " + model.SampleValue(m.Gauge.GetValue()).String())
		}
		b.WriteString("; ")
	}
	return b.String()
}
