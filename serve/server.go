package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/status"
)

// Defaults of Options' zero fields.
const (
	DefaultListen            = "127.0.0.1:8417"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxRequestBody    = 1 << 20
	maxHeaderBytes           = 64 << 10
)

// ErrNeedToken: a listen address off loopback was given without a token.
var ErrNeedToken = errors.New("a listen address off loopback needs a token (--token-file)")

// Options configure a Server. Store is required.
type Options struct {
	Listen string   // host:port; default DefaultListen
	Hosts  []string // further names the Host header may carry (a reverse proxy's, a hostname)
	Token  string   // every request must carry it; required off loopback

	Store    fusebox.Store // the state store, shared with the CLI
	Clock    fusebox.Clock // default fusebox.WallClock
	Logger   *slog.Logger  // default: nowhere
	Redactor *redact.Redactor

	ReadHeaderTimeout time.Duration // default DefaultReadHeaderTimeout
	IdleTimeout       time.Duration // default DefaultIdleTimeout
	MaxRequestBody    int64         // default DefaultMaxRequestBody

	// ClientOptions are added to those of every httpcall.Client the server
	// makes (a transport, say).
	ClientOptions []httpcall.Option

	// OnCall, when set, hears the end of each call the daemon makes for
	// its callers (not one refused before it is made, at max_in_flight;
	// once for callers sharing a call; not a health check): the name
	// called and the call's error. It runs on the call's goroutine and
	// must be quick.
	OnCall func(name string, err error)
}

// Server is the daemon. It is safe for concurrent use; Reload may be called
// while it serves.
type Server struct {
	o        Options
	handler  http.Handler
	world    atomic.Pointer[world]
	log      *slog.Logger
	metrics  *metrics
	flights  flights
	inFlight inFlight
	reloaded chan struct{} // tells runHealth to start the new world's checks
	// transport is every world's: a daemon has many callers at once, and
	// the default two idle connections per host would have most calls dial.
	// Plain http:// upstreams get httpcall's DirectTransport, whose round
	// trips stay on the handler's goroutine.
	transport http.RoundTripper

	reloadMu sync.Mutex // one Reload at a time
}

// world is what one config gives: the client and what it serves. It is
// replaced whole on Reload, so a request sees one config throughout.
type world struct {
	client  *httpcall.Client
	targets config.Targets
	catalog status.Catalog
	longest time.Duration    // the longest deadline of any endpoint or chain
	limits  map[string]int   // max_in_flight by endpoint
	health  *httpcall.Client // the health checks' probes
	checks  []healthCheck
}

// endpointsOf returns the endpoints a call of name may use.
func (w *world) endpointsOf(name string) []string {
	if eps, ok := w.catalog.Chains[name]; ok {
		return eps
	}
	return []string{name}
}

// New returns a Server for targets, refusing an unsafe listen address.
func New(targets config.Targets, o Options) (*Server, error) {
	if o.Store == nil {
		return nil, errors.New("serve: no store")
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", o.Listen, err)
	}
	if !isLoopback(host) && o.Token == "" {
		return nil, ErrNeedToken
	}
	if o.Clock == nil {
		o.Clock = fusebox.WallClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = DefaultMaxRequestBody
	}
	s := &Server{o: o, log: o.Logger, reloaded: make(chan struct{}, 1)}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns, base.MaxIdleConnsPerHost = 256, 64
	s.transport = httpcall.NewDirectTransport(base)
	s.metrics = newMetrics()
	w, err := s.build(targets)
	if err != nil {
		return nil, err
	}
	s.world.Store(w)
	mux := http.NewServeMux()
	s.routes(mux)
	g, err := newGuard(o.Listen, o.Hosts, o.Token, mux)
	if err != nil {
		return nil, err
	}
	s.handler = g
	return s, nil
}

func (s *Server) build(t config.Targets) (*world, error) {
	opts := append([]httpcall.Option{
		httpcall.WithLogger(s.o.Logger), httpcall.WithClock(s.o.Clock), httpcall.WithRedactor(s.o.Redactor),
		httpcall.WithSyncListener(s.metrics.listen), httpcall.WithTransport(s.transport),
		httpcall.WithAnswerLevel(slog.LevelDebug), // -v shows each answer; failures and transitions always show
	}, s.o.ClientOptions...)
	client, err := httpcall.New(s.o.Store, t.Endpoints, t.Chains, opts...)
	if err != nil {
		return nil, err
	}
	probeEndpoints, checks := probes(t)
	health, err := httpcall.New(s.o.Store, probeEndpoints, nil, opts...)
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	w := &world{client: client, targets: t, catalog: status.Catalog{Chains: map[string][]string{}}, limits: map[string]int{},
		health: health, checks: checks}
	for _, ep := range t.Endpoints {
		if ep.MaxInFlight > 0 {
			w.limits[ep.Name] = ep.MaxInFlight
		}
		w.catalog.Endpoints = append(w.catalog.Endpoints, ep.Name)
		w.longest = max(w.longest, ep.Policy.WithDefaults().Retry.Deadline)
	}
	for _, ch := range t.Chains {
		w.catalog.Chains[ch.Name] = ch.Endpoints
		d := ch.Deadline
		if d == 0 {
			for _, n := range ch.Endpoints {
				for _, ep := range t.Endpoints {
					if ep.Name == n {
						d += ep.Policy.WithDefaults().Retry.Deadline
					}
				}
			}
		}
		w.longest = max(w.longest, d)
	}
	return w, nil
}

// Reload replaces the endpoints and chains served. When targets are bad the
// old ones stay and the error says why. Calls already running finish with
// the config they started with.
func (s *Server) Reload(targets config.Targets) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	w, err := s.build(targets)
	if err != nil {
		return err
	}
	s.world.Store(w)
	select {
	case s.reloaded <- struct{}{}:
	default: // a restart is pending already
	}
	return nil
}

// Handler returns the daemon's HTTP handler, guard included.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves on ln until ctx ends, then stops taking requests and waits
// for those in flight, each within its own deadline, before returning.
//
// While it serves, the garbage collector runs at GOGC 400 with a soft
// memory limit of 128 MiB, unless the environment sets GOGC or GOMEMLIMIT
// (see servingGCPercent), and as before afterwards.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http1{
		handler:           s.handler,
		readHeaderTimeout: s.o.ReadHeaderTimeout,
		idleTimeout:       s.o.IdleTimeout,
		maxHeaderBytes:    maxHeaderBytes,
		log:               s.log,
		// A request's calls must not end with the daemon's context: on
		// SIGTERM they finish within their deadline.
		base: context.WithoutCancel(ctx),
	}
	defer s.transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" { // a person's choice (GOGC=off, a limit on a small board) stands
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(servingMemoryLimit))
		defer debug.SetGCPercent(debug.SetGCPercent(servingGCPercent))
	}
	hctx, stopHealth := context.WithCancel(ctx)
	var health sync.WaitGroup
	health.Go(func() { s.runHealth(hctx) })
	defer health.Wait()
	defer stopHealth()

	done := make(chan error, 1)
	go func() { done <- hs.serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := s.world.Load().longest + 5*time.Second
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := hs.shutdown(sctx)
	if err != nil {
		s.log.Warn("calls still running at the end of the shutdown grace; closing them", "grace", grace)
		hs.close()
	}
	<-done
	return err
}

// servingGCPercent and servingMemoryLimit are the garbage collector's
// settings while the daemon serves. Each call allocates some kilobytes,
// nearly all of it garbage once answered, and the daemon's live heap is
// small: at Go's default of 100 it collected every two hundred calls or so,
// a fifth of its CPU under load (docs/benchmarks.md, the serve section). At
// 400 it collects a fifth as often; under that load its resident size went
// from about 20 MB to about 32.
//
// The limit keeps garbage from piling up past 128 MiB when the live heap is
// large (a big body decoded for jq): at 400 alone a heap of 60 MiB could
// hold 240 more of garbage, which the jq memory bound, on heap growth,
// would take for the program's own and stop it (httpcall's watchHeap).
// Past the limit the collector runs more often, as it would at a lower
// GOGC; it is soft, never a cause to fail.
const (
	servingGCPercent   = 400
	servingMemoryLimit = 128 << 20
)
