package serve

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/metrics"
	"github.com/fusebox-hq/fusebox/statestore"
	"github.com/fusebox-hq/fusebox/status"
)

// durationBuckets are the bounds, in seconds, of fusebox_call_duration_seconds.
var durationBuckets = []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// counters are what only the daemon sees, counted as it happens; what the
// state store holds (state and counts, of the CLI's runs as much as the
// daemon's) is read at scrape time. Names are configured endpoints and
// chains only, so a caller cannot grow the label sets. It is safe for
// concurrent use.
type counters struct {
	mu        sync.Mutex
	requests  map[[3]string]uint64 // name, source, code
	fallbacks map[string]uint64
	stale     map[string]uint64
	events    map[[2]string]uint64 // circuit, kind
	durations map[[2]string]*metrics.Histogram
	codes     map[int]string // the label text of each status code seen
}

func newCounters() *counters {
	return &counters{
		requests: map[[3]string]uint64{}, fallbacks: map[string]uint64{}, stale: map[string]uint64{},
		events: map[[2]string]uint64{}, durations: map[[2]string]*metrics.Histogram{}, codes: map[int]string{},
	}
}

// listen counts the daemon's own circuit events, on the goroutine of the
// call (fusebox.WithSyncListener): a goroutine an event would cost more.
func (m *counters) listen(e breaker.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[[2]string{e.Circuit, string(e.Kind)}]++
}

// observe counts one call the daemon answered, or failed to (source "").
// first is the endpoint a chain tries first.
func (m *counters) observe(name, first, source string, code int, took time.Duration) {
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
		h = &metrics.Histogram{}
		m.durations[k] = h
	}
	h.Observe(durationBuckets, took.Seconds())
}

// codeText is strconv.Itoa(code), made once per code; under m.mu.
func (m *counters) codeText(code int) string {
	t, ok := m.codes[code]
	if !ok {
		t = strconv.Itoa(code)
		m.codes[code] = t
	}
	return t
}

// own returns the families of what the daemon counted itself.
func (m *counters) own() []*metrics.Family {
	m.mu.Lock()
	defer m.mu.Unlock()
	req := metrics.New("fusebox_serve_requests_total", "counter",
		"Calls answered by the daemon, by endpoint or chain, source (the endpoint, fresh, stale, or none) and HTTP status.")
	for k, v := range m.requests {
		req.Add(float64(v), "name", k[0], "source", k[1], "code", k[2])
	}
	fb := metrics.New("fusebox_fallbacks_total", "counter",
		"Chain calls through the daemon answered by an endpoint after the chain's first.")
	for k, v := range m.fallbacks {
		fb.Add(float64(v), "name", k)
	}
	st := metrics.New("fusebox_stale_answers_total", "counter",
		"Calls through the daemon answered with a stale stored answer.")
	for k, v := range m.stale {
		st.Add(float64(v), "name", k)
	}
	ev := metrics.New("fusebox_serve_circuit_events_total", "counter",
		"Circuit events of the daemon's own calls and health checks: success, failure, neutral_failure, skip, transition.")
	for k, v := range m.events {
		ev.Add(float64(v), "name", k[0], "kind", k[1])
	}
	du := metrics.New("fusebox_call_duration_seconds", "histogram",
		"How long the daemon's calls took, retries and fallbacks included, by outcome: answered, stale, failed.")
	keys := make([][2]string, 0, len(m.durations))
	for k := range m.durations {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		m.durations[k].AddTo(du, durationBuckets, "name", k[0], "outcome", k[1])
	}
	return []*metrics.Family{req, fb, st, ev, du}
}

// stored returns the families read from the shared state store now: every
// process's state and counts, not only the daemon's. Scrapes at once share
// one reading (see shared).
func (s *Server) stored(ctx context.Context) []*metrics.Family {
	fams, _ := shared(ctx, &s.reads, "metrics", func(ctx context.Context) ([]*metrics.Family, error) {
		return s.readStored(ctx), nil
	})
	return fams
}

func (s *Server) readStored(ctx context.Context) []*metrics.Family {
	rows, err := s.Snapshot(ctx)
	// Down, not Reason: a Redis store standing in with the host's replica
	// is not up.
	up := err == nil && statestore.Down(s.o.Store) == nil
	fams := metrics.Circuits(rows, up)
	if !up {
		return fams
	}
	// Each circuit's events are counted as they are read, one circuit at a
	// time: the scrape holds the counts, not the logs.
	reasons := metrics.Reasons(func(yield func(breaker.Event) bool) {
		for _, r := range rows {
			if r.Kind == status.KindChain {
				continue
			}
			stopped := false
			if err := s.o.Store.ScanEvents(ctx, r.Name, time.Time{}, func(e breaker.Event) bool {
				stopped = !yield(e)
				return !stopped
			}); err != nil {
				s.unreadable(r.Name, err) // that circuit's failures are left out, not every circuit's
			}
			if stopped {
				return
			}
		}
	})
	return append(fams, reasons)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	// A new slice: the stored families are shared by scrapes at once.
	fams := slices.Concat(s.stored(ctx), s.counters.own(), metrics.Process())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = metrics.Write(w, fams)
}
