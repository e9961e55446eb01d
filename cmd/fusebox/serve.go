package main

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/serve"
)

type serveOptions struct {
	listen    string
	hosts     []string
	token     string
	tokenFile string
	addonOpts string
	wait      time.Duration
}

func newServeCmd(a *app) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [--token-file FILE] [--host NAME]...",
		Short: "Answer HTTP callers (n8n, Node-RED, Home Assistant) for the config's endpoints and chains",
		Long: `Run a local daemon that answers for each endpoint and chain of the config
with the same retries, breakers, fallbacks and stored answers as 'fusebox call',
in the same state dir: a cron job that trips a breaker protects the daemon's
callers, and the other way round.

  GET|POST /call/NAME              the answer: the upstream's status, headers and
                                   body (or its extract: as JSON), with
                                   X-Fusebox-Source, X-Fusebox-Attempts and, when
                                   stale, X-Fusebox-Stale-Age; 503 with a JSON
                                   error and Retry-After when nothing answers;
                                   POST only when what it sends is unsafe;
                                   answered within the caller's wait
  GET      /api/circuits           the 'fusebox status --json' document
  POST     /api/circuits/NAME/trip force a circuit open (?for=10m)
  POST     /api/circuits/NAME/reset
  GET      /api/outages            each circuit's outages of the last 24 hours
  GET      /metrics                Prometheus metrics, counts from the state dir
  GET      /                       a status page (every asset in the binary)

An endpoint's http: block may add max_in_flight, pass_query, pass_body,
allow_subpath (GET /call/NAME/PATH below its URL) and health: {path, interval,
expect}, with which the daemon probes its half-open circuit itself. A circuit's
own health: {mqtt: {topic, up}} has the daemon open and close it as the jq
condition up judges each message on topic, on the top-level mqtt: broker: cron
runs skip while it is down, without asking.

It listens on 127.0.0.1:8417 unless told otherwise; an address off loopback
needs a token (--token-file, or $FUSEBOX_SERVE_TOKEN) that every request must
send as "Authorization: Bearer TOKEN". Requests must name this daemon in their
Host header: the listen address, or a name given with --host. It calls only the
config's URLs: it is not a proxy.

A caller says how long it waits in an X-Fusebox-Wait header (seconds, "30",
or a duration, "2500ms") or a fusebox_wait query parameter. The daemon answers
within it, less a tenth (at most 1s) for the answer to travel: with what an
endpoint, a chain's next endpoint or a stale answer gives by then, else a 503
with Retry-After. A caller that says nothing waits --default-wait, below the
30s that Node-RED, n8n and Home Assistant give a call.

It notifies about the transitions it makes (notify: in the config) in the
background, and holds one connection to each MQTT broker while it runs.

SIGHUP reloads the config (a bad one is reported and the old one kept);
SIGTERM stops taking requests, lets those in flight finish within their
deadlines, and delivers the notifications queued within their timeout.`,
		Example: `  fusebox serve
  curl -s http://127.0.0.1:8417/call/weather
  fusebox serve --listen 0.0.0.0:8417 --token-file /etc/fusebox/token --host nas.lan`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), a, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.listen, "listen", serve.DefaultListen, "listen on `ADDR` (host:port)")
	fs.StringSliceVar(&o.hosts, "host", nil, "also accept `NAME` in the Host header (repeatable)")
	fs.StringVar(&o.tokenFile, "token-file", "", "require the token in `FILE` on every request")
	fs.StringVar(&o.addonOpts, "addon-options", "", "Home Assistant add-on: take the token and more --host names from the Supervisor's options `FILE` (/data/options.json), and accept the container's hostname")
	fs.DurationVar(&o.wait, "default-wait", serve.DefaultWait, "answer a caller that sends no X-Fusebox-Wait within `DURATION`")
	return cmd
}

func runServe(ctx context.Context, a *app, o *serveOptions) error {
	if o.wait <= 0 {
		return usageErrorf("--default-wait: want a duration of more than 0, got %s", o.wait)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	token := a.getenv("FUSEBOX_SERVE_TOKEN")
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return usageErrorf("--token-file: %v", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return usageErrorf("--token-file: %s is empty", o.tokenFile)
		}
	}
	hosts := o.hosts
	if o.addonOpts != "" {
		if o.tokenFile != "" {
			return usageErrorf("--addon-options and --token-file both give the token: give one")
		}
		ao, err := readAddonOptions(o.addonOpts)
		if err != nil {
			return &configError{err: fmt.Errorf("--addon-options: %w", err)}
		}
		token, hosts = ao.Token, addonHosts(o.hosts, ao)
	}
	store := a.openStore(cfg)
	defer store.Close()

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return usageErrorf("--listen: %v", err)
	}
	host, _, _ := net.SplitHostPort(o.listen)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	n := a.newDaemonNotifier(cfg, store)
	defer n.close() // on SIGTERM, after the calls in flight: their transitions are queued
	srv, err := serve.New(targets(cfg), serve.Options{
		Listen: net.JoinHostPort(host, port), Hosts: hosts, Token: token,
		Store: store, Clock: a.clock, Logger: a.logger, Redactor: a.redactor, Wait: o.wait,
		ClientOptions: n.clientOptions(), OnCall: n.ran, Subscribe: n.subscribe,
	})
	if err != nil {
		ln.Close()
		if err == serve.ErrNeedToken {
			return &usageError{msg: err.Error()}
		}
		return &configError{err: err}
	}

	n.control(srv)
	n.start()
	// What net/http's transport says through the standard logger (an
	// upstream's unsolicited answer, dropped with its connection) is the
	// daemon's to log, at WARN: a long-running process may redirect it.
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn).Writer())

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				a.reloadServe(srv, n)
			}
		}
	}()
	// A daemon says where it listens and that it stopped, at the level a
	// default log shows (a cron run stays silent; a daemon starts rarely).
	a.logger.Log(ctx, fusebox.LevelNotice, fmt.Sprintf("serving on http://%s", ln.Addr()), "addr", ln.Addr().String())
	err = srv.Serve(ctx, ln)
	n.close()
	a.logger.Log(context.Background(), fusebox.LevelNotice, "stopped")
	return err
}

// reloadServe reads the config again and serves it, or says why not and
// keeps serving the old one.
func (a *app) reloadServe(srv *serve.Server, n *daemonNotifier) {
	cfg, err := readConfig(a.configFlag, a.getenv, a.home, "", nil)
	if err == nil {
		err = srv.Reload(targets(cfg))
	}
	if err != nil {
		a.logger.Error("config not reloaded; still serving the old one: "+a.redactor.Secrets(err.Error()), "reload", "failed")
		return
	}
	n.reload(cfg)
	a.logger.Log(context.Background(), fusebox.LevelNotice, "config reloaded", "reload", "ok", "endpoints", len(targets(cfg).Endpoints))
}

// targets are what the daemon serves of cfg (nil: no config file).
func targets(cfg *config.Config) serve.Targets {
	endpoints, chains := cfg.Callables()
	return serve.Targets{Endpoints: endpoints, Chains: chains, Watches: cfg.Watches(), Circuits: cfg.CircuitNames()}
}
