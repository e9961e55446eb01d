package serve

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/human"
	"github.com/fusebox-hq/fusebox/status"
)

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /call/{name}", s.handleCall)
	mux.HandleFunc("POST /call/{name}", s.handleCall)
	mux.HandleFunc("GET /call/{name}/{rest...}", s.handleCall)
	mux.HandleFunc("POST /call/{name}/{rest...}", s.handleCall)
	mux.HandleFunc("GET /api/circuits", s.handleCircuits)
	mux.HandleFunc("POST /api/circuits/{name}/trip", s.handleTrip)
	mux.HandleFunc("POST /api/circuits/{name}/reset", s.handleReset)
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("GET /api/outages", s.handleOutages)
	page := pageHandler()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /index.html", page)
	mux.Handle("GET /app.js", page)
	mux.Handle("GET /style.css", page)
}

// Snapshot returns the rows of every circuit, endpoint and chain, as
// `fusebox status --json` shows them, failure reasons redacted.
func (s *Server) Snapshot(ctx context.Context) ([]status.Row, error) {
	wd := s.world.Load()
	answers, _ := s.o.Store.(answers.Store)
	rows, err := status.Snapshot(ctx, s.o.Store, answers, wd.catalog, nil, s.o.Clock.Now())
	if err != nil {
		return nil, err
	}
	red := wd.client.Redactor()
	for i := range rows {
		rows[i].LastFailure = red.String(rows[i].LastFailure)
	}
	return rows, nil
}

func (s *Server) handleCircuits(w http.ResponseWriter, r *http.Request) {
	rows, err := s.Snapshot(r.Context())
	if err != nil {
		refuse(w, http.StatusInternalServerError, "reading the state store: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, rows)
}

func (s *Server) handleTrip(w http.ResponseWriter, r *http.Request) {
	var d time.Duration
	if v := r.URL.Query().Get("for"); v != "" {
		var err error
		if d, err = human.ParseDuration(v); err != nil || d <= 0 {
			refuse(w, http.StatusBadRequest, "for: want a duration like 10m")
			return
		}
	}
	s.force(w, r, func(ctx context.Context, c *fusebox.Circuits, name string) (breaker.View, error) {
		return c.Trip(ctx, name, d, "")
	})
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.force(w, r, func(ctx context.Context, c *fusebox.Circuits, name string) (breaker.View, error) {
		return c.Reset(ctx, name, "")
	})
}

// knows reports whether the daemon knows the circuit: one of the config
// (an endpoint, a watched circuit, one only commands run under), or one in
// the store.
func (s *Server) knows(ctx context.Context, wd *world, name string) bool {
	if slices.Contains(wd.catalog.Endpoints, name) || slices.Contains(wd.targets.Circuits, name) {
		return true
	}
	if fusebox.ValidateName(name) != nil {
		return false
	}
	names, _ := s.o.Store.Names(ctx)
	return slices.Contains(names, name)
}

// force trips or resets a circuit the daemon knows (see knows) and answers
// with its row.
func (s *Server) force(w http.ResponseWriter, r *http.Request, fn func(context.Context, *fusebox.Circuits, string) (breaker.View, error)) {
	name := r.PathValue("name")
	wd := s.world.Load()
	if !s.knows(r.Context(), wd, name) {
		writeJSON(w, http.StatusNotFound, problem{Error: "no such circuit", Name: name})
		return
	}
	c := wd.client.Circuits()
	if _, err := fn(r.Context(), c, name); err != nil {
		refuse(w, http.StatusInternalServerError, err.Error())
		return
	}
	_ = c.Flush(r.Context())
	rows, err := status.Snapshot(r.Context(), s.o.Store, nil, wd.catalog, []string{name}, s.o.Clock.Now())
	if err != nil || len(rows) != 1 {
		refuse(w, http.StatusInternalServerError, "reading the circuit back failed")
		return
	}
	rows[0].LastFailure = wd.client.Redactor().String(rows[0].LastFailure)
	writeJSON(w, http.StatusOK, rows[0])
}
