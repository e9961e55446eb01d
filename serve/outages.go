package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/status"
)

// OutageWindow is how far back the status page's chart looks.
const OutageWindow = 24 * time.Hour

// MaxOutages bounds each circuit's outages in the timeline: the newest
// MaxOutages within the window are listed and the older ones only counted
// (Earlier), so a circuit that flapped all day costs the daemon, and the
// page, a few kilobytes rather than its event log decoded.
const MaxOutages = 100

// Outage is a time a circuit was open or forced open.
type Outage struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`               // now, for an outage still going on
	Forced bool      `json:"forced,omitempty"` // tripped by hand
	Reason string    `json:"reason,omitempty"` // why it opened
}

// CircuitOutages are one circuit's outages within a window.
type CircuitOutages struct {
	Name    string   `json:"name"`
	Outages []Outage `json:"outages"`           // the newest MaxOutages, oldest first
	Earlier int      `json:"earlier,omitempty"` // outages in the window before those listed
}

// Timeline is the /api/outages document.
type Timeline struct {
	From     time.Time        `json:"from"`
	To       time.Time        `json:"to"`
	Circuits []CircuitOutages `json:"circuits"`
}

// scanner hands fn a circuit's events at or after the window's start, in
// the order its store appended them (fusebox.Admin.ScanEvents).
type scanner func(name string, fn func(breaker.Event) bool) error

// outages folds each circuit's transitions, one at a time, into its
// outages between from and now. A circuit whose first transition in the
// window leaves an open phase was open since before it; one open now
// (phase, from rows) is open until now. Only the circuit being read and
// the MaxOutages newest outages of each are held.
func outages(rows []status.Row, from, now time.Time, scan scanner) ([]CircuitOutages, error) {
	var out []CircuitOutages
	for _, r := range rows {
		if r.Kind == status.KindChain {
			continue
		}
		f := fold{from: from}
		if err := scan(r.Name, f.add); err != nil {
			// One log that can be neither read nor moved aside (another
			// user's, in a shared dir) hides that circuit's past outages,
			// not every circuit's: its state still shows one going on.
			f = fold{from: from}
		}
		out = append(out, f.done(r, now))
	}
	return out, nil
}

// fold is one circuit's outages so far.
type fold struct {
	from    time.Time
	seen    bool  // a transition in the window was read
	cur     *open // the outage going on, if any
	list    []Outage
	earlier int
}

type open struct {
	at     time.Time
	forced bool
	reason string
}

func (f *fold) add(e breaker.Event) bool {
	if e.Kind != breaker.EventTransition || e.Time.Before(f.from) {
		return true
	}
	first := !f.seen
	f.seen = true
	if first && f.cur == nil && (e.From == breaker.Open || e.From == breaker.ForcedOpen || e.From == breaker.HalfOpen) {
		f.cur = &open{at: f.from, forced: e.From == breaker.ForcedOpen}
	}
	opening := e.To == breaker.Open || e.To == breaker.ForcedOpen
	switch {
	case opening && f.cur == nil:
		f.cur = &open{at: e.Time, forced: e.To == breaker.ForcedOpen, reason: e.Reason}
	case opening:
		// Reopened after a failed probe, or tripped while open: the same
		// outage goes on.
		f.cur.forced = f.cur.forced || e.To == breaker.ForcedOpen
	case e.To == breaker.Closed && f.cur != nil:
		f.keep(Outage{From: f.cur.at, To: e.Time, Forced: f.cur.forced, Reason: f.cur.reason})
		f.cur = nil
	}
	return true
}

// keep appends o, dropping the oldest outages (counted in earlier) once
// twice MaxOutages are held, so that memory stays within that.
func (f *fold) keep(o Outage) {
	if len(f.list) == 2*MaxOutages {
		f.earlier += MaxOutages
		f.list = append(f.list[:0], f.list[MaxOutages:]...)
	}
	f.list = append(f.list, o)
}

// done returns the circuit's outages: the newest MaxOutages, the one going
// on (from its row) last.
func (f *fold) done(r status.Row, now time.Time) CircuitOutages {
	if r.State != string(breaker.Closed) && r.State != status.StateUnknown {
		o := f.cur
		if o == nil {
			o = &open{at: f.from, forced: r.State == string(breaker.ForcedOpen), reason: r.LastFailure}
			if r.OpenedAt != nil && r.OpenedAt.After(f.from) {
				o.at = *r.OpenedAt
			}
		}
		f.keep(Outage{From: o.at, To: now, Forced: o.forced, Reason: o.reason})
	}
	if n := len(f.list) - MaxOutages; n > 0 {
		f.earlier += n
		f.list = f.list[n:]
	}
	if f.list == nil {
		f.list = []Outage{}
	}
	return CircuitOutages{Name: r.Name, Outages: f.list, Earlier: f.earlier}
}

// Timeline returns the outages of every circuit over the last
// OutageWindow.
func (s *Server) Timeline(ctx context.Context) (Timeline, error) {
	rows, err := s.Snapshot(ctx)
	if err != nil {
		return Timeline{}, err
	}
	now := s.o.Clock.Now().Wall
	from := now.Add(-OutageWindow)
	circuits, err := outages(rows, from, now, func(name string, fn func(breaker.Event) bool) error {
		err := s.o.Store.ScanEvents(ctx, name, from, fn)
		if err != nil {
			s.unreadable(name, err)
		}
		return err
	})
	if err != nil {
		return Timeline{}, err
	}
	red := s.world.Load().client.Redactor()
	for i := range circuits {
		for j := range circuits[i].Outages {
			o := &circuits[i].Outages[j]
			o.Reason = red.String(o.Reason)
		}
	}
	return Timeline{From: from, To: now, Circuits: circuits}, nil
}

// handleOutages answers the Timeline as writeJSON would. Callers asking at
// once share one reading of the store and one copy of the document (see
// shared), so twenty pages open on it read each event log once.
func (s *Server) handleOutages(w http.ResponseWriter, r *http.Request) {
	doc, err := shared(r.Context(), &s.reads, "outages", func(ctx context.Context) ([]byte, error) {
		tl, err := s.Timeline(ctx)
		if err != nil {
			return nil, err
		}
		return json.MarshalIndent(tl, "", "  ")
	})
	if err != nil {
		refuse(w, http.StatusInternalServerError, "reading the state store: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
	w.Write([]byte("\n"))
}

// unreadable tells, once per circuit while the daemon runs, that its event
// log cannot be read: the status page polls, and each poll would say it
// again.
func (s *Server) unreadable(name string, err error) {
	if _, told := s.toldUnreadable.LoadOrStore(name, true); !told {
		s.log.Warn("events of a circuit left out: its log cannot be read", "circuit", name, "err", err)
	}
}
