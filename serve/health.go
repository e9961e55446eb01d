package serve

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
)

// healthCheck is one endpoint's active health check.
type healthCheck struct {
	name     string
	interval time.Duration
}

// probes returns, for each endpoint with a health: block, the endpoint its
// probe is made with: the same name, so the same circuit and its probe
// lease; one attempt; the health path and expect when given; no stored
// answers.
func probes(t Targets) ([]*httpcall.Endpoint, []healthCheck) {
	var eps []*httpcall.Endpoint
	var checks []healthCheck
	for _, ep := range t.Endpoints {
		h := ep.Health
		if h == nil {
			continue
		}
		p := *ep
		p.Health, p.Fresh, p.Stale = nil, 0, 0
		p.Policy.Retry.Attempts = 1
		if h.Path != "" {
			base, err := url.Parse(ep.URL)
			ref, rerr := url.Parse(h.Path)
			if err != nil || rerr != nil {
				continue // httpcall.New reports a bad URL; config a bad path
			}
			p.URL = base.ResolveReference(ref).String()
			p.Method, p.Body, p.Extract = "GET", "", httpcall.JQ{}
			p.Expect = httpcall.Expect{}
		}
		if len(h.Expect.Status) > 0 || !h.Expect.JQ.IsZero() {
			p.Expect = h.Expect
		}
		eps = append(eps, &p)
		interval := h.Interval
		if interval <= 0 {
			interval = httpcall.DefaultHealthInterval
		}
		checks = append(checks, healthCheck{name: ep.Name, interval: interval})
	}
	return eps, checks
}

// runHealth runs the health checks and MQTT watches of the world being served until ctx
// ends, starting them again for the new world after each Reload.
func (s *Server) runHealth(ctx context.Context) {
	for {
		w := s.world.Load()
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, hc := range w.checks {
			wg.Go(func() { s.watch(wctx, w, hc) })
		}
		for _, wt := range w.watches {
			wg.Go(func() { s.watchMQTT(wctx, w, wt) })
		}
		select {
		case <-ctx.Done():
		case <-s.reloaded:
		}
		cancel()
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
	}
}

// watch looks at one circuit every interval, and probes it when the
// breaker would let a probe through.
func (s *Server) watch(ctx context.Context, w *world, hc healthCheck) {
	t := time.NewTicker(hc.interval)
	defer t.Stop()
	for {
		s.checkHealth(ctx, w, hc.name)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkHealth probes the named circuit when it is open (the open period need
// not have ended) or half-open, with a probe slot free. The probe goes
// through Circuits.Probe, so the breaker grants it the probe lease every
// process takes: a cron job probing at the same moment makes the daemon
// wait, and the other way round; a failed check leaves the open period as
// it was, a passed one closes the circuit at once.
func (s *Server) checkHealth(ctx context.Context, w *world, name string) {
	st, err := s.o.Store.Load(ctx, name)
	if err != nil {
		return
	}
	v := st.View(s.o.Clock.Now())
	probes := max(w.client.Policy(name).Breaker.Probes, 1)
	if v.Phase != breaker.Open && v.Phase != breaker.HalfOpen || len(st.Probes) >= probes {
		return
	}
	res, err := w.health.Call(ctx, name, httpcall.CallOptions{Probe: true})
	switch {
	case err == nil:
		s.log.Info("health check passed; circuit closed", "circuit", name, "status", res.Status)
	case ctx.Err() == nil:
		s.log.Info("health check failed; circuit stays open", "circuit", name, "err", err)
	}
}
