package serve

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/failopen"
	"github.com/fusebox-hq/fusebox/status"
)

// phases are the values of fusebox_circuitbreaker_state's state label.
var phases = []string{string(fusebox.Closed), string(fusebox.Open), string(fusebox.HalfOpen), string(fusebox.ForcedOpen)}

// durationBuckets are the bounds, in seconds, of fusebox_call_duration_seconds.
var durationBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// metrics are what only the daemon sees, counted as it happens; what the
// state store holds (state and counts, of the CLI's runs as much as the
// daemon's) is read at scrape time. Names are configured endpoints and
// chains only, so a caller cannot grow the label sets. It is safe for
// concurrent use.
type metrics struct {
	mu        sync.Mutex
	requests  map[[3]string]uint64 // name, source, code
	fallbacks map[string]uint64
	stale     map[string]uint64
	events    map[[2]string]uint64 // circuit, kind
	durations map[[2]string]*histogram
	codes     map[int]string // the label text of each status code seen
}

func newMetrics() *metrics {
	return &metrics{
		requests: map[[3]string]uint64{}, fallbacks: map[string]uint64{}, stale: map[string]uint64{},
		events: map[[2]string]uint64{}, durations: map[[2]string]*histogram{}, codes: map[int]string{},
	}
}

// listen counts the daemon's own circuit events, on the goroutine of the
// call (fusebox.WithSyncListener): a goroutine an event would cost more.
func (m *metrics) listen(e fusebox.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[[2]string{e.Circuit, string(e.Kind)}]++
}

// observe counts one call the daemon answered, or failed to (source "").
// first is the endpoint a chain tries first.
func (m *metrics) observe(name, first, source string, code int, took time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	outcome := "answered"
	switch source {
	case "":
		outcome, source = "failed", "none"
	case "stale":
		outcome = "stale"
		m.stale[name]++
	case "fresh":
	default:
		if source != first {
			m.fallbacks[name]++
		}
	}
	m.requests[[3]string{name, source, m.codeText(code)}]++
	k := [2]string{name, outcome}
	h := m.durations[k]
	if h == nil {
		h = &histogram{}
		m.durations[k] = h
	}
	h.observe(durationBuckets, took.Seconds())
}

// codeText is strconv.Itoa(code), made once per code; under m.mu.
func (m *metrics) codeText(code int) string {
	t, ok := m.codes[code]
	if !ok {
		t = strconv.Itoa(code)
		m.codes[code] = t
	}
	return t
}

// own returns the families of what the daemon counted itself.
func (m *metrics) own() []*family {
	m.mu.Lock()
	defer m.mu.Unlock()
	req := &family{name: "fusebox_serve_requests_total", typ: "counter",
		help: "Calls answered by the daemon, by endpoint or chain, source (the endpoint, fresh, stale, or none) and HTTP status."}
	for k, v := range m.requests {
		req.add(float64(v), "name", k[0], "source", k[1], "code", k[2])
	}
	fb := &family{name: "fusebox_fallbacks_total", typ: "counter",
		help: "Chain calls through the daemon answered by an endpoint after the chain's first."}
	for k, v := range m.fallbacks {
		fb.add(float64(v), "name", k)
	}
	st := &family{name: "fusebox_stale_answers_total", typ: "counter",
		help: "Calls through the daemon answered with a stale stored answer."}
	for k, v := range m.stale {
		st.add(float64(v), "name", k)
	}
	ev := &family{name: "fusebox_serve_circuit_events_total", typ: "counter",
		help: "Circuit events of the daemon's own calls and health checks: success, failure, neutral_failure, skip, transition."}
	for k, v := range m.events {
		ev.add(float64(v), "name", k[0], "kind", k[1])
	}
	du := &family{name: "fusebox_call_duration_seconds", typ: "histogram",
		help: "How long the daemon's calls took, retries and fallbacks included, by outcome: answered, stale, failed."}
	keys := make([][2]string, 0, len(m.durations))
	for k := range m.durations {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		m.durations[k].addTo(du, durationBuckets, "name", k[0], "outcome", k[1])
	}
	return []*family{req, fb, st, ev, du}
}

// stored returns the families read from the shared state store now: every
// process's state and counts, not only the daemon's.
func (s *Server) stored(ctx context.Context) []*family {
	up := &family{name: "fusebox_state_store_up", typ: "gauge",
		help: "1 when the state store can be read, 0 when the daemon runs failing open."}
	state := &family{name: "fusebox_circuitbreaker_state", typ: "gauge",
		help: "1 for the circuit's current state, 0 for the others."}
	attempts := &family{name: "fusebox_attempts_total", typ: "counter",
		help: "Attempts whose outcome counted for or against the breaker, by every process sharing the state store."}
	successes := &family{name: "fusebox_successes_total", typ: "counter",
		help: "Successful attempts, by every process sharing the state store."}
	failures := &family{name: "fusebox_failures_total", typ: "counter",
		help: "Failed attempts that counted against the breaker, by every process sharing the state store."}
	skips := &family{name: "fusebox_skips_total", typ: "counter",
		help: "Calls failed fast on an open circuit, by every process sharing the state store."}
	consecutive := &family{name: "fusebox_consecutive_failures", typ: "gauge",
		help: "Consecutive failures of the circuit now."}
	reasons := &family{name: "fusebox_failures_by_reason_total", typ: "counter",
		help: "Failed attempts in the retained event log (30 days by default), by cause (fusebox.Cause, as the failure's producer stored it); counted is false for neutral failures (local network, 4xx)."}
	fams := []*family{up, state, attempts, successes, failures, skips, consecutive, reasons}

	rows, err := s.Snapshot(ctx)
	if err != nil || failopen.Reason(s.o.Store) != nil {
		up.add(0)
		return fams
	}
	up.add(1)
	for _, r := range rows {
		if r.Kind == status.KindChain || r.Problem != "" { // a problem's values are unknown, not zero
			continue
		}
		for _, p := range phases {
			v := 0.0
			if r.State == p {
				v = 1
			}
			state.add(v, "name", r.Name, "state", p)
		}
		attempts.add(float64(r.TotalSuccesses+r.TotalFailures), "name", r.Name)
		successes.add(float64(r.TotalSuccesses), "name", r.Name)
		failures.add(float64(r.TotalFailures), "name", r.Name)
		skips.add(float64(r.Skipped), "name", r.Name)
		consecutive.add(float64(r.ConsecutiveFailures), "name", r.Name)
	}
	events, err := s.o.Store.AllEvents(ctx, time.Time{})
	if err != nil {
		return fams
	}
	n := map[[3]string]float64{}
	for _, e := range events {
		cause := string(cmp.Or(e.Cause, fusebox.CauseOther)) // the failure's kind, as its producer stored it
		switch e.Kind {
		case fusebox.EventFailure:
			n[[3]string{e.Circuit, cause, "true"}]++
		case fusebox.EventNeutralFailure:
			n[[3]string{e.Circuit, cause, "false"}]++
		}
	}
	for k, v := range n {
		reasons.add(v, "name", k[0], "reason", k[1], "counted", k[2])
	}
	return fams
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	fams := append(s.stored(ctx), s.metrics.own()...)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = writeFamilies(w, fams)
}
