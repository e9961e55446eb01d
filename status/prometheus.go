package status

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// States lists the values of fusebox_circuitbreaker_state's state label.
var States = []fusebox.Phase{fusebox.Closed, fusebox.Open, fusebox.HalfOpen, fusebox.ForcedOpen}

// metric is one family of the Prometheus text format.
type metric struct {
	name, kind, help string
	value            func(Row) (float64, bool) // false: no sample for the row
}

// Metrics are the families WritePrometheus writes, one sample per circuit
// (chains have none): the names `fusebox serve`'s /metrics uses too.
var metrics = []metric{
	{"fusebox_calls_total", "counter", "Attempts run under the circuit (successes and counted failures).",
		func(r Row) (float64, bool) { return float64(r.TotalSuccesses + r.TotalFailures), true }},
	{"fusebox_successes_total", "counter", "Attempts that succeeded.",
		func(r Row) (float64, bool) { return float64(r.TotalSuccesses), true }},
	{"fusebox_failures_total", "counter", "Attempts that failed and counted against the breaker.",
		func(r Row) (float64, bool) { return float64(r.TotalFailures), true }},
	{"fusebox_skips_total", "counter", "Calls failed fast on an open circuit, nothing run.",
		func(r Row) (float64, bool) { return float64(r.Skipped), true }},
	{"fusebox_consecutive_failures", "gauge", "Failed attempts in a row.",
		func(r Row) (float64, bool) { return float64(r.ConsecutiveFailures), true }},
	{"fusebox_last_success_timestamp_seconds", "gauge", "When an attempt last succeeded (Unix time).",
		func(r Row) (float64, bool) { return unix(r.LastSuccessAt) }},
	{"fusebox_last_failure_timestamp_seconds", "gauge", "When an attempt last failed (Unix time).",
		func(r Row) (float64, bool) { return unix(r.LastFailureAt) }},
	{"fusebox_circuitbreaker_open_until_timestamp_seconds", "gauge", "When an open circuit may be probed (Unix time).",
		func(r Row) (float64, bool) { return unix(r.OpenUntil) }},
}

func unix(t *time.Time) (float64, bool) {
	if t == nil {
		return 0, false
	}
	return float64(t.UnixMilli()) / 1000, true
}

// WritePrometheus writes the rows' circuits in the Prometheus text
// exposition format (what node_exporter's textfile collector reads):
// fusebox_circuitbreaker_state{name,state} is 1 for the circuit's state
// and 0 for the others, then the families of metrics, each labelled name.
// A circuit whose row has a Problem has no samples: its values are unknown,
// and a zero would read as a reset counter.
func WritePrometheus(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	var circuits []Row
	for _, r := range rows {
		if r.Kind != KindChain && r.Problem == "" {
			circuits = append(circuits, r)
		}
	}
	fmt.Fprintln(bw, "# HELP fusebox_circuitbreaker_state The circuit's state: 1 for the one it is in.")
	fmt.Fprintln(bw, "# TYPE fusebox_circuitbreaker_state gauge")
	for _, r := range circuits {
		for _, s := range States {
			v := 0
			if r.State == string(s) {
				v = 1
			}
			fmt.Fprintf(bw, "fusebox_circuitbreaker_state{name=%s,state=%q} %d\n", label(r.Name), s, v)
		}
	}
	for _, m := range metrics {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", m.name, m.help, m.name, m.kind)
		for _, r := range circuits {
			if v, ok := m.value(r); ok {
				fmt.Fprintf(bw, "%s{name=%s} %s\n", m.name, label(r.Name), strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
	}
	return bw.Flush()
}

// label quotes a label value. Circuit names need no escape (ValidateName),
// but a value is escaped as the format says all the same.
func label(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
