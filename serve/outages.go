package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/status"
)

// OutageWindow is how far back the status page's chart looks.
const OutageWindow = 24 * time.Hour

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
	Outages []Outage `json:"outages"`
}

// Timeline is the /api/outages document.
type Timeline struct {
	From     time.Time        `json:"from"`
	To       time.Time        `json:"to"`
	Circuits []CircuitOutages `json:"circuits"`
}

// outages turns transitions (sorted by time, at or after from) into each
// circuit's outages between from and now. A circuit whose first transition in
// the window leaves an open phase was open since before it; one open now
// (phase, from rows) is open until now.
func outages(events []breaker.Event, rows []status.Row, from, now time.Time) []CircuitOutages {
	type open struct {
		at     time.Time
		forced bool
		reason string
	}
	current := map[string]*open{}
	seen := map[string]bool{}
	byName := map[string][]Outage{}
	for _, e := range events {
		if e.Kind != breaker.EventTransition || e.Time.Before(from) {
			continue
		}
		first := !seen[e.Circuit]
		seen[e.Circuit] = true
		opening := e.To == breaker.Open || e.To == breaker.ForcedOpen
		cur := current[e.Circuit]
		if first && cur == nil && (e.From == breaker.Open || e.From == breaker.ForcedOpen || e.From == breaker.HalfOpen) {
			cur = &open{at: from, forced: e.From == breaker.ForcedOpen}
		}
		switch {
		case opening && cur == nil:
			cur = &open{at: e.Time, forced: e.To == breaker.ForcedOpen, reason: e.Reason}
		case opening:
			// Reopened after a failed probe, or tripped while open: the same
			// outage goes on.
			cur.forced = cur.forced || e.To == breaker.ForcedOpen
		case e.To == breaker.Closed && cur != nil:
			byName[e.Circuit] = append(byName[e.Circuit], Outage{From: cur.at, To: e.Time, Forced: cur.forced, Reason: cur.reason})
			cur = nil
		}
		current[e.Circuit] = cur
	}
	var out []CircuitOutages
	for _, r := range rows {
		if r.Kind == status.KindChain {
			continue
		}
		list := byName[r.Name]
		if r.State != string(breaker.Closed) && r.State != status.StateUnknown {
			o := current[r.Name]
			if o == nil {
				o = &open{at: from, forced: r.State == string(breaker.ForcedOpen), reason: r.LastFailure}
				if r.OpenedAt != nil && r.OpenedAt.After(from) {
					o.at = *r.OpenedAt
				}
			}
			list = append(list, Outage{From: o.at, To: now, Forced: o.forced, Reason: o.reason})
		}
		if list == nil {
			list = []Outage{}
		}
		out = append(out, CircuitOutages{Name: r.Name, Outages: list})
	}
	return out
}

// Timeline returns the outages of every circuit over the last OutageWindow.
func (s *Server) Timeline(ctx context.Context) (Timeline, error) {
	rows, err := s.Snapshot(ctx)
	if err != nil {
		return Timeline{}, err
	}
	now := s.o.Clock.Now().Wall
	from := now.Add(-OutageWindow)
	events, err := s.o.Store.AllEvents(ctx, from)
	if err != nil {
		return Timeline{}, err
	}
	red := s.world.Load().client.Redactor()
	tl := Timeline{From: from, To: now, Circuits: outages(events, rows, from, now)}
	for i := range tl.Circuits {
		for j := range tl.Circuits[i].Outages {
			o := &tl.Circuits[i].Outages[j]
			o.Reason = red.String(o.Reason)
		}
	}
	return tl, nil
}

func (s *Server) handleOutages(w http.ResponseWriter, r *http.Request) {
	tl, err := s.Timeline(r.Context())
	if err != nil {
		refuse(w, http.StatusInternalServerError, "reading the state store: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, tl)
}
