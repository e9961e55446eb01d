package metrics_test

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/metrics"
	"github.com/fusebox-hq/fusebox/status"
)

func TestCircuitsAreTheTextFormat(t *testing.T) {
	opened := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	until := opened.Add(30 * time.Second)
	rows := []status.Row{
		{Name: "bridge", Kind: status.KindCircuit, State: "open", ConsecutiveFailures: 3, TotalFailures: 7, TotalSuccesses: 40, Skipped: 5, LastFailureAt: &opened, OpenUntil: &until},
		{Name: "weather", Kind: status.KindChain, State: "chain"},
		{Name: "wttr", Kind: status.KindEndpoint, State: "closed", TotalSuccesses: 2},
	}
	events := []breaker.Event{
		{Circuit: "bridge", Kind: breaker.EventFailure, Cause: breaker.CauseTimeout},
		{Circuit: "bridge", Kind: breaker.EventFailure, Cause: breaker.CauseTimeout},
		{Circuit: "bridge", Kind: breaker.EventNeutralFailure, Cause: httpcall.CauseLocal},
		{Circuit: "bridge", Kind: breaker.EventSuccess},
	}
	var b bytes.Buffer
	if err := metrics.Write(&b, append(metrics.Circuits(rows, true), metrics.Reasons(slices.Values(events)))); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("the Prometheus parser rejects it: %v\n%s", err, b.String())
	}
	problems, err := promlint.New(strings.NewReader(b.String())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	value := func(family, name, state string) (float64, bool) {
		f := families[family]
		if f == nil {
			return 0, false
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] != name || state != "" && labels["state"] != state && labels["reason"]+"/"+labels["counted"] != state {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.Counter.GetValue(), true
		}
		return 0, false
	}
	tests := []struct {
		family, name, state string
		want                float64
	}{
		{"fusebox_circuitbreaker_state", "bridge", "open", 1},
		{"fusebox_circuitbreaker_state", "bridge", "closed", 0},
		{"fusebox_circuitbreaker_state", "wttr", "closed", 1},
		{"fusebox_circuitbreaker_state", "wttr", "half_open", 0},
		{"fusebox_attempts_total", "bridge", "", 47},
		{"fusebox_calls_total", "bridge", "", 47},
		{"fusebox_state_store_up", "", "", 1},
		{"fusebox_failures_by_reason_total", "bridge", "timeout/true", 2},
		{"fusebox_failures_by_reason_total", "bridge", "local_network/false", 1},
		{"fusebox_failures_total", "bridge", "", 7},
		{"fusebox_successes_total", "bridge", "", 40},
		{"fusebox_skips_total", "bridge", "", 5},
		{"fusebox_consecutive_failures", "bridge", "", 3},
		{"fusebox_last_failure_timestamp_seconds", "bridge", "", float64(opened.Unix())},
		{"fusebox_circuitbreaker_open_until_timestamp_seconds", "bridge", "", float64(until.Unix())},
	}
	for _, tt := range tests {
		if got, ok := value(tt.family, tt.name, tt.state); !ok || got != tt.want {
			t.Errorf("%s{name=%q,state=%q} = %v (present %v), want %v", tt.family, tt.name, tt.state, got, ok, tt.want)
		}
	}
	if _, ok := value("fusebox_calls_total", "weather", ""); ok {
		t.Error("a chain has samples")
	}
	if _, ok := value("fusebox_last_success_timestamp_seconds", "bridge", ""); ok {
		t.Error("a circuit that never succeeded has a last success")
	}
	if families["fusebox_attempts_total"].GetType().String() != "COUNTER" {
		t.Errorf("fusebox_attempts_total is a %s", families["fusebox_attempts_total"].GetType())
	}
}

// A store that cannot be read says so, and nothing else about its circuits.
func TestCircuitsOfAStoreDown(t *testing.T) {
	var b bytes.Buffer
	rows := []status.Row{{Name: "bridge", Kind: status.KindCircuit, State: "open"}}
	if err := metrics.Write(&b, metrics.Circuits(rows, false)); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "fusebox_state_store_up 0\n") || strings.Contains(got, "bridge") {
		t.Errorf("a store down:\n%s", got)
	}
}

// A circuit the store could not read (its row has a Problem) has no
// samples: its values are unknown, and zeros would read as a reset.
func TestCircuitsLeaveOutARowWithAProblem(t *testing.T) {
	rows := []status.Row{
		{Name: "attic", Kind: status.KindCircuit, State: status.StateUnknown, Problem: "load attic: permission denied"},
		{Name: "kitchen", Kind: status.KindCircuit, State: "closed", TotalSuccesses: 2},
	}
	var b bytes.Buffer
	if err := metrics.Write(&b, metrics.Circuits(rows, true)); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); strings.Contains(s, `"attic"`) || !strings.Contains(s, `fusebox_successes_total{name="kitchen"} 2`) {
		t.Errorf("the text gives values for the circuit it could not read, or lacks the one it could:\n%s", s)
	}
}

// The process's own families lint as the text format, and on Linux carry
// what /proc says: a live process has goroutines, resident memory and
// open descriptors, at most as many as it may open.
func TestProcessFamilies(t *testing.T) {
	var b bytes.Buffer
	if err := metrics.Write(&b, metrics.Process()); err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(strings.NewReader(b.String())).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("the Prometheus parser rejects it: %v\n%s", err, b.String())
	}
	value := func(name string) float64 {
		f := families[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("%s: not one sample in\n%s", name, b.String())
		}
		return f.Metric[0].GetGauge().GetValue()
	}
	if g := value("go_goroutines"); g < 1 {
		t.Errorf("go_goroutines %v, want at least this test's own", g)
	}
	if runtime.GOOS != "linux" {
		return
	}
	if rss := value("process_resident_memory_bytes"); rss < 1<<20 {
		t.Errorf("process_resident_memory_bytes %v: a Go test process holds more than a MiB", rss)
	}
	open, limit := value("process_open_fds"), value("process_max_fds")
	if open < 3 || open > limit {
		t.Errorf("process_open_fds %v of process_max_fds %v: want stdin, stdout and stderr at least, and no more than the limit", open, limit)
	}
}
