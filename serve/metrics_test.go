package serve_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/runner"
	"github.com/fusebox-hq/fusebox/serve"
)

// scrape reads /metrics with client_golang's own parser, and fails on
// anything its linter objects to.
func scrape(t *testing.T, d *daemon) map[string]*dto.MetricFamily {
	t.Helper()
	r := d.get(t, "/metrics")
	if r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %q", r.code, r.header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v\n%s", err, r.body)
	}
	problems, err := promlint.New(strings.NewReader(r.body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	return fams
}

// value returns the value of the family's sample with the given labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func TestMetricsCountWhatTheCLIDidToo(t *testing.T) {
	primary, backup := newUpstream(t, "primary"), newUpstream(t, "backup")
	primary.down.Store(true)
	d := start(t, serve.Targets{
		Endpoints: []*httpcall.Endpoint{endpoint("primary", primary.URL), endpoint("backup", backup.URL)},
		Chains:    []*httpcall.Chain{{Name: "weather", Endpoints: []string{"primary", "backup"}}},
	}, serve.Options{})

	// Another process on the same state dir (a cron job's fusebox run).
	cli, err := file.Open(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	cron := fusebox.New(cli, fusebox.WithPolicy(fastPolicy()))
	// Two failed attempts open it (fastPolicy); the next run is skipped.
	_ = cron.Do(context.Background(), "nas-backup", func(context.Context) error {
		return &fusebox.Failure{Err: errors.New("exit status 3"), Cause: runner.CauseExit} // as package runner fails
	})
	_ = cron.Do(context.Background(), "nas-backup", func(context.Context) error { return nil }) // skipped: open

	if r := d.get(t, "/call/weather"); r.code != 200 {
		t.Fatal(r.code)
	}
	fams := scrape(t, d)
	for name, want := range map[string]float64{
		"nas-backup": 2, // the CLI's failures, from the shared store
		"primary":    2, // the daemon's
	} {
		if got := value(t, fams, "fusebox_failures_total", "name", name); got != want {
			t.Errorf("fusebox_failures_total{name=%q} = %v, want %v", name, got, want)
		}
	}
	if got := value(t, fams, "fusebox_skips_total", "name", "nas-backup"); got != 1 {
		t.Errorf("CLI skips = %v, want 1", got)
	}
	if got := value(t, fams, "fusebox_failures_by_reason_total", "name", "nas-backup", "reason", string(runner.CauseExit)); got != 2 {
		t.Errorf("failures by reason exit = %v, want 2", got)
	}
	if got := value(t, fams, "fusebox_failures_by_reason_total", "name", "primary", "reason", string(httpcall.CauseStatus5xx)); got != 2 {
		t.Errorf("failures by reason status_5xx = %v, want 2", got)
	}
	for _, c := range []struct {
		name, state string
		want        float64
	}{
		{"primary", "open", 1}, {"primary", "closed", 0}, {"primary", "half_open", 0}, {"primary", "forced_open", 0},
		{"backup", "closed", 1}, {"backup", "open", 0},
		{"nas-backup", "open", 1},
	} {
		if got := value(t, fams, "fusebox_circuitbreaker_state", "name", c.name, "state", c.state); got != c.want {
			t.Errorf("state{%s,%s} = %v, want %v", c.name, c.state, got, c.want)
		}
	}
	if got := value(t, fams, "fusebox_fallbacks_total", "name", "weather"); got != 1 {
		t.Errorf("fallbacks = %v, want 1", got)
	}
	if got := value(t, fams, "fusebox_call_duration_seconds", "name", "weather", "outcome", "answered"); got != 1 {
		t.Errorf("duration observations = %v, want 1", got)
	}
	if got := value(t, fams, "fusebox_serve_requests_total", "name", "weather", "source", "backup", "code", "200"); got != 1 {
		t.Errorf("requests = %v", got)
	}
	if got := value(t, fams, "fusebox_serve_circuit_events_total", "name", "primary", "kind", "transition"); got != 1 {
		t.Errorf("the daemon's own transitions of primary = %v, want 1", got)
	}
	if got := value(t, fams, "fusebox_state_store_up"); got != 1 {
		t.Errorf("store up = %v", got)
	}

	// A trip from anywhere shows at the next scrape.
	if _, err := cron.Trip(context.Background(), "backup", 0, ""); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, d)
	if got := value(t, fams, "fusebox_circuitbreaker_state", "name", "backup", "state", "forced_open"); got != 1 {
		t.Errorf("backup forced_open = %v after a trip by another process", got)
	}
}

func TestMetricsCountStaleAnswers(t *testing.T) {
	u := newUpstream(t, "u")
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) { e.Stale = 1 << 62 })}}, serve.Options{})
	d.get(t, "/call/u")
	u.down.Store(true)
	if r := d.get(t, "/call/u"); r.header.Get(serve.HeaderSource) != "stale" {
		t.Fatal("not stale")
	}
	fams := scrape(t, d)
	if got := value(t, fams, "fusebox_stale_answers_total", "name", "u"); got != 1 {
		t.Errorf("stale answers = %v, want 1", got)
	}
	if got := value(t, fams, "fusebox_call_duration_seconds", "name", "u", "outcome", "stale"); got != 1 {
		t.Errorf("stale durations = %v, want 1", got)
	}
}
