package metrics

import (
	"cmp"
	"iter"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/status"
)

// Phases are the values of fusebox_circuitbreaker_state's state label.
var Phases = []breaker.Phase{breaker.Closed, breaker.Open, breaker.HalfOpen, breaker.ForcedOpen}

// circuit is one family of Circuits with one sample per circuit.
type circuit struct {
	name, typ, help string
	value           func(status.Row) (float64, bool) // false: no sample for the row
}

var circuitFamilies = []circuit{
	{"fusebox_attempts_total", "counter", "Attempts whose outcome counted for or against the breaker (successes and counted failures), by every process sharing the state store.",
		func(r status.Row) (float64, bool) { return float64(r.TotalSuccesses + r.TotalFailures), true }},
	{"fusebox_calls_total", "counter", "Deprecated: the same as fusebox_attempts_total, the name status --format prometheus gave it first.",
		func(r status.Row) (float64, bool) { return float64(r.TotalSuccesses + r.TotalFailures), true }},
	{"fusebox_successes_total", "counter", "Successful attempts, by every process sharing the state store.",
		func(r status.Row) (float64, bool) { return float64(r.TotalSuccesses), true }},
	{"fusebox_failures_total", "counter", "Failed attempts that counted against the breaker, by every process sharing the state store.",
		func(r status.Row) (float64, bool) { return float64(r.TotalFailures), true }},
	{"fusebox_skips_total", "counter", "Calls failed fast on an open circuit, nothing run, by every process sharing the state store.",
		func(r status.Row) (float64, bool) { return float64(r.Skipped), true }},
	{"fusebox_consecutive_failures", "gauge", "Failed attempts in a row now.",
		func(r status.Row) (float64, bool) { return float64(r.ConsecutiveFailures), true }},
	{"fusebox_last_success_timestamp_seconds", "gauge", "When an attempt last succeeded (Unix time).",
		func(r status.Row) (float64, bool) { return unix(r.LastSuccessAt) }},
	{"fusebox_last_failure_timestamp_seconds", "gauge", "When an attempt last failed (Unix time).",
		func(r status.Row) (float64, bool) { return unix(r.LastFailureAt) }},
	{"fusebox_circuitbreaker_open_until_timestamp_seconds", "gauge", "When an open circuit may be probed (Unix time).",
		func(r status.Row) (float64, bool) { return unix(r.OpenUntil) }},
}

func unix(t *time.Time) (float64, bool) {
	if t == nil {
		return 0, false
	}
	return float64(t.UnixMilli()) / 1000, true
}

// Circuits returns the families read from the state store: whether it could
// be read (up), and for each circuit of rows (chains have none) its state,
// counts and times, each labelled name. With up false the rows are not
// read: the store's counts are unknown. A row with a Problem has no samples
// either: its values are unknown, and a zero would read as a counter reset.
func Circuits(rows []status.Row, up bool) []*Family {
	upf := New("fusebox_state_store_up", "gauge", "1 when the state store can be read and written, 0 when fusebox runs failing open or, for Redis, on the host's local replica.")
	state := New("fusebox_circuitbreaker_state", "gauge", "1 for the circuit's current state, 0 for the others.")
	fams := []*Family{upf, state}
	for _, c := range circuitFamilies {
		fams = append(fams, New(c.name, c.typ, c.help))
	}
	if !up {
		upf.Add(0)
		return fams
	}
	upf.Add(1)
	for _, r := range rows {
		if r.Kind == status.KindChain || r.Problem != "" {
			continue
		}
		for _, p := range Phases {
			v := 0.0
			if r.State == string(p) {
				v = 1
			}
			state.Add(v, "name", r.Name, "state", string(p))
		}
		for i, c := range circuitFamilies {
			if v, ok := c.value(r); ok {
				fams[2+i].Add(v, "name", r.Name)
			}
		}
	}
	return fams
}

// Reasons returns fusebox_failures_by_reason_total: the failed attempts of
// events by circuit and cause (the failure's kind, as its producer stored
// it), with counted "true" for failures that counted against the breaker and
// "false" for neutral ones (this machine's own network, a 4xx). It holds
// the counts, not the events: a caller can hand them over as it reads them
// (fusebox.Admin.ScanEvents).
func Reasons(events iter.Seq[breaker.Event]) *Family {
	f := New("fusebox_failures_by_reason_total", "counter",
		"Failed attempts in the retained event log, by circuit, cause and whether they counted against the breaker.")
	n := map[[3]string]float64{}
	for e := range events {
		cause := string(cmp.Or(e.Cause, breaker.CauseOther))
		switch e.Kind {
		case breaker.EventFailure:
			n[[3]string{e.Circuit, cause, "true"}]++
		case breaker.EventNeutralFailure:
			n[[3]string{e.Circuit, cause, "false"}]++
		}
	}
	for k, v := range n {
		f.Add(v, "name", k[0], "reason", k[1], "counted", k[2])
	}
	return f
}
