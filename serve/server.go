package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/status"
)

// Defaults of Options' zero fields.
const (
	DefaultListen            = "127.0.0.1:8417"
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxRequestBody    = 1 << 20
	DefaultMaxConns          = 1024
	DefaultBodyMemory        = 24 << 20
	maxHeaderBytes           = 64 << 10
)

// ErrNeedToken: a listen address off loopback was given without a token.
var ErrNeedToken = errors.New("a listen address off loopback needs a token (--token-file)")

// Options configure a Server. Store is required.
type Options struct {
	Listen string   // host:port; default DefaultListen
	Hosts  []string // further names the Host header may carry (a reverse proxy's, a hostname)
	Token  string   // every request must carry it; required off loopback

	Store    fusebox.Admin // the state store, shared with the CLI
	Clock    fusebox.Clock // default fusebox.WallClock
	Logger   *slog.Logger  // default: nowhere
	Redactor *redact.Redactor

	ReadHeaderTimeout time.Duration // for a request's header; default DefaultReadHeaderTimeout
	ReadTimeout       time.Duration // for its body, after the header; default DefaultReadTimeout
	WriteTimeout      time.Duration // for an answer, from its start; default DefaultWriteTimeout
	IdleTimeout       time.Duration // a kept-alive connection's wait for a request; default DefaultIdleTimeout
	MaxRequestBody    int64         // default DefaultMaxRequestBody
	// Wait is how long a caller that declares no wait (HeaderWait,
	// QueryWait) waits for its answer; default DefaultWait.
	Wait time.Duration
	// MaxConns caps the connections open at once; by default
	// DefaultMaxConns, or fewer when the process's open-file limit holds
	// fewer with room for its other descriptors (see connsAllowed). A cap
	// above what the limit allows is lowered to it, with a WARN.
	MaxConns int

	// JQMemory is what the jq programs of every call and health check may
	// use at once (httpcall.JQMemory); default httpcall.DefaultJQMemory.
	JQMemory int64
	// BodyMemory is what the upstream bodies of every call and health
	// check, and the callers' request bodies, may hold at once while they
	// are read and used (httpcall.BodyMemory); by default
	// DefaultBodyMemory, or room for the largest max_body of the first
	// targets or MaxRequestBody (twice it, as a body of unknown length is
	// read, and 1 MiB for small bodies) when that is more.
	BodyMemory int64

	// ClientOptions are added to those of every httpcall.Client the server
	// makes (a transport, say).
	ClientOptions []httpcall.Option

	// OnCall, when set, hears the end of each call the daemon makes for
	// its callers (not one refused before it is made, at max_in_flight;
	// once for callers sharing a call; not a health check): the name
	// called and the call's error. It runs on the call's goroutine and
	// must be quick.
	OnCall func(name string, err error)

	// Subscribe has fn hear every message of a health: mqtt: watch's
	// topic, retained ones at each connection included, until stop; it is
	// required when the targets hold a watch. fn must be quick.
	Subscribe func(w notify.Watch, fn func(payload []byte)) (stop func(), err error)
}

// Server is the daemon. It is safe for concurrent use; Reload may be called
// while it serves.
type Server struct {
	o          Options
	handler    http.Handler
	world      atomic.Pointer[world]
	log        *slog.Logger
	counters   *counters
	calls      singleflight.Group // GET calls callers share (see handleCall)
	gaveUp     sync.WaitGroup     // calls going on after their callers were answered (see handleCall)
	reads      singleflight.Group // readings of the store callers share (see shared)
	inFlight   inFlight
	slots      *slots               // the connections Serve holds, within MaxConns
	reloaded   chan struct{}        // tells runHealth to start the new world's checks
	jqMemory   *httpcall.JQMemory   // every world's: a reload does not add a bound
	bodyMemory *httpcall.BodyMemory // the same
	// transport is every world's: a daemon has many callers at once, and
	// the default two idle connections per host would have most calls dial.
	transport *http.Transport

	reloadMu sync.Mutex // one Reload at a time
	// toldUnreadable holds the circuits whose unreadable event log was
	// told (unreadable).
	toldUnreadable sync.Map
}

// world is what one config gives: the client and what it serves. It is
// replaced whole on Reload, so a request sees one config throughout.
type world struct {
	client  *httpcall.Client
	targets Targets
	catalog status.Catalog
	longest time.Duration            // the longest of own, capped at maxWait: the shutdown grace
	own     map[string]time.Duration // each endpoint's and chain's longest call (httpcall's Longest)
	limits  map[string]int           // max_in_flight by endpoint
	unsafe  map[string]string        // an unsafe method sent upstream, by endpoint and chain
	health  *httpcall.Client         // the health checks' probes
	checks  []healthCheck
	watches []watch // health: mqtt:
}

// endpointsOf returns the endpoints a call of name may use.
func (w *world) endpointsOf(name string) []string {
	if eps, ok := w.catalog.Chains[name]; ok {
		return eps
	}
	return []string{name}
}

// New returns a Server for targets, refusing an unsafe listen address.
func New(targets Targets, o Options) (*Server, error) {
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
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	nofile := openFileLimit()
	switch allowed := connsAllowed(nofile); {
	case o.MaxConns <= 0:
		o.MaxConns = min(DefaultMaxConns, allowed)
	case o.MaxConns > allowed:
		o.Logger.Warn(fmt.Sprintf("serve: at most %d connections at once: the open-file limit (%d) holds no more beside the daemon's other files", allowed, nofile),
			"max_conns", o.MaxConns, "allowed", allowed, "nofile", nofile)
		o.MaxConns = allowed
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = DefaultMaxRequestBody
	}
	if o.JQMemory <= 0 {
		o.JQMemory = httpcall.DefaultJQMemory
	}
	if o.BodyMemory <= 0 {
		o.BodyMemory = max(DefaultBodyMemory, 2*o.MaxRequestBody+1<<20)
		for _, e := range targets.Endpoints {
			o.BodyMemory = max(o.BodyMemory, 2*max(e.MaxBody, httpcall.DefaultMaxBody)+1<<20)
		}
	}
	s := &Server{o: o, log: o.Logger, reloaded: make(chan struct{}, 1), jqMemory: httpcall.NewJQMemory(o.JQMemory),
		bodyMemory: httpcall.NewBodyMemory(o.BodyMemory),
		slots:      newSlots(o.MaxConns, DefaultUnprovenIdle)}
	s.transport = httpcall.NewTransport() // proxies from the environment, HTTP/2 over TLS, headers bounded
	// No more idle upstream connections than callers' (connsAllowed).
	s.transport.MaxIdleConns, s.transport.MaxIdleConnsPerHost = min(256, o.MaxConns), min(64, o.MaxConns)
	s.counters = newCounters()
	w, err := s.build(targets)
	if err != nil {
		return nil, err
	}
	s.world.Store(w)
	mux := http.NewServeMux()
	s.routes(mux)
	g, err := newGuard(o.Listen, o.Hosts, o.Token, mux, s.slots)
	if err != nil {
		return nil, err
	}
	s.handler = g
	return s, nil
}

func (s *Server) build(t Targets) (*world, error) {
	opts := append([]httpcall.Option{
		httpcall.WithLogger(s.o.Logger), httpcall.WithClock(s.o.Clock), httpcall.WithRedactor(s.o.Redactor),
		httpcall.WithSyncListener(s.counters.listen), httpcall.WithTransport(s.transport), httpcall.WithJQMemory(s.jqMemory), httpcall.WithBodyMemory(s.bodyMemory),
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
	watches, err := compileWatches(t.Watches)
	if err != nil {
		return nil, err
	}
	if len(watches) > 0 && s.o.Subscribe == nil {
		return nil, fmt.Errorf("%s: health: mqtt: needs a broker connection (serve.Options.Subscribe)", watches[0].cfg.Circuit)
	}
	w := &world{client: client, targets: t, catalog: status.Catalog{Chains: map[string][]string{}}, limits: map[string]int{},
		unsafe: map[string]string{}, own: map[string]time.Duration{}, health: health, checks: checks, watches: watches}
	for _, ep := range t.Endpoints {
		if ep.MaxInFlight > 0 {
			w.limits[ep.Name] = ep.MaxInFlight
		}
		if m := strings.ToUpper(cmp.Or(ep.Method, http.MethodGet)); !isSafe(m) {
			w.unsafe[ep.Name] = m
		}
		w.catalog.Endpoints = append(w.catalog.Endpoints, ep.Name)
		w.own[ep.Name] = ep.Longest()
	}
	policy := func(n string) fusebox.Policy {
		for _, ep := range t.Endpoints {
			if ep.Name == n {
				return ep.Policy
			}
		}
		return fusebox.Policy{}
	}
	for _, ch := range t.Chains {
		w.catalog.Chains[ch.Name] = ch.Endpoints
		for _, n := range ch.Endpoints {
			if m := w.unsafe[n]; m != "" && w.unsafe[ch.Name] == "" {
				w.unsafe[ch.Name] = m
			}
		}
		w.own[ch.Name] = ch.Longest(policy)
	}
	for _, d := range w.own {
		w.longest = max(w.longest, min(d, maxWait))
	}
	return w, nil
}

// Longest returns the longest the daemon takes over a call of name for a
// caller that waits wait (0: one that declares none, who waits
// Options.Wait): the call's own longest (httpcall's Longest), or the
// budget of the wait when that comes first. It reports false for a name
// the daemon does not serve.
func (s *Server) Longest(name string, wait time.Duration) (time.Duration, bool) {
	own, ok := s.world.Load().own[name]
	if wait <= 0 {
		wait = s.o.Wait
	}
	return min(own, CallBudget(min(wait, maxWait))), ok
}

// Reload replaces the endpoints and chains served. When targets are bad the
// old ones stay and the error says why. Calls already running finish with
// the config they started with.
func (s *Server) Reload(targets Targets) error {
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
// It serves on net/http's Server: the header must arrive within
// ReadHeaderTimeout and a body within ReadTimeout, an answer is written
// within WriteTimeout of its start, a connection idle for IdleTimeout is
// closed, and at most MaxConns connections are open at once: past it a new
// one takes the slot of the oldest that has not shown the token and is in
// no request, or waits in the listen backlog until one ends (see slots).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.withDeadlines(s.handler),
		ReadHeaderTimeout: s.o.ReadHeaderTimeout,
		ReadTimeout:       s.o.ReadHeaderTimeout + s.o.ReadTimeout,
		IdleTimeout:       s.o.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// A request's calls must not end with the daemon's context: on
		// SIGTERM they finish within their deadline.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// What net/http logs is about a connection (a TLS handshake on a
		// plain port, a panic): the daemon's own log, at WARN.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// The slots hold the connections within MaxConns, an unproven
		// one giving up its slot to a new caller (see slots).
		ConnState:   s.slots.connState,
		ConnContext: withConn,
	}
	hs.SetKeepAlivesEnabled(true)
	defer s.transport.CloseIdleConnections()
	hctx, stopHealth := context.WithCancel(ctx)
	var health sync.WaitGroup
	health.Go(func() { s.runHealth(hctx) })
	defer health.Wait()
	defer stopHealth()

	done := make(chan error, 1)
	go func() { done <- hs.Serve(s.slots.listener(ln)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	grace := s.world.Load().longest + 5*time.Second
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if err != nil {
		s.log.Warn("calls still running at the end of the shutdown grace; closing them", "grace", grace)
		hs.Close()
	}
	// Calls whose callers had their answer at the wait's end go on to
	// record their outcomes; every handler has returned, so none is added.
	ended := make(chan struct{})
	go func() {
		s.gaveUp.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-sctx.Done():
		s.log.Warn("calls past their callers' wait still running at the end of the shutdown grace", "grace", grace)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return err
}

// withDeadlines sets each request's read and write deadlines around next.
//
// The server's ReadTimeout bounds reading a request, its body included;
// once the body is read (handlers that read one call clearReadDeadline), and at once
// for a request without one, the read deadline is cleared: a call may run
// for longer than a body takes to arrive, and net/http ends the request's
// context when a read on its connection fails, a deadline included. The
// write deadline starts with the answer: a caller that stops reading holds
// its connection, and the answer's buffer, for WriteTimeout at most.
func (s *Server) withDeadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			clearReadDeadline(w)
		}
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, timeout: s.o.WriteTimeout}, r)
	})
}

// clearReadDeadline lifts the read deadline of w's connection.
func clearReadDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
}

// deadlineWriter sets its connection's write deadline when the answer's
// header is written.
type deadlineWriter struct {
	http.ResponseWriter
	timeout time.Duration
	started bool
}

func (d *deadlineWriter) start() {
	if !d.started {
		d.started = true
		_ = http.NewResponseController(d.ResponseWriter).SetWriteDeadline(time.Now().Add(d.timeout))
	}
}

func (d *deadlineWriter) WriteHeader(code int) {
	d.start()
	d.ResponseWriter.WriteHeader(code)
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.start()
	return d.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
