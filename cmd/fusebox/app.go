package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/logging"
	"github.com/fusebox-hq/fusebox/redact"
	"github.com/fusebox-hq/fusebox/redis"
	"github.com/fusebox-hq/fusebox/statestore"
	"github.com/fusebox-hq/fusebox/sysclock"
)

// app is what every command shares: its streams, environment and global
// flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stderrFile     *os.File // for journald detection
	getenv         func(string) string
	euid           int
	home           string
	clock          fusebox.Clock

	stateFlag  string
	configFlag string
	log        logging.Options

	logger   *slog.Logger
	redactor *redact.Redactor

	// exits says the process exits when the command returns (main sets
	// it; in-process callers such as the tests do not): what only a
	// long-lived process must undo is left.
	exits bool

	config struct { // loadConfig's result
		// forRun names the circuit when the config is read for fusebox
		// run, which evaluates no jq expression and needs no other circuit
		// (config.LoadForRun); "" for every other command.
		forRun string
		// uses, when not nil, names the only circuits whose values the
		// command uses (config.LoadUsing): status, history, trip, reset
		// and gc read every circuit's name and policy, and no other's
		// endpoint or notifications.
		uses   []string
		loaded bool
		cfg    *config.Config
		err    error
	}
}

func newApp() *app {
	home, _ := os.UserHomeDir()
	return &app{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, stderrFile: os.Stderr,
		getenv: os.Getenv, euid: os.Geteuid(), home: home,
		clock: sysclock.Clock{},
		log:   logging.Options{Format: "text"},
	}
}

// setup makes the logger once the global flags are parsed.
func (a *app) setup(secrets ...string) error {
	if err := a.log.Validate(); err != nil {
		return usageErrorf("--log-format: %v", err)
	}
	// A redis:// state given by flag or environment may carry a password.
	for _, state := range []string{a.stateFlag, a.getenv("FUSEBOX_STATE_DIR")} {
		if p := redis.Password(state); p != "" {
			secrets = append(secrets, p)
		}
	}
	a.redactor = redact.New(secrets...)
	if cfg := a.config.cfg; cfg != nil && cfg.Partial {
		// run read its own part of the config: the other circuits'
		// secrets are read, from the whole file, only for a line printed.
		a.redactor = a.redactor.WithLater(func() []string { return config.Secrets(cfg.Path) })
	}
	a.logger = logging.New(a.stderr, a.log, a.redactor, logging.JournalStream(a.getenv, a.stderrFile))
	return nil
}

// loadConfig finds and loads the config. No config at all is fine (nil);
// one named by --config or $FUSEBOX_CONFIG must exist (Find returns it
// whether or not it does, and Load says it is missing).
//
// The file is read once a process.
func (a *app) loadConfig() (*config.Config, error) {
	if !a.config.loaded {
		a.config.cfg, a.config.err = readConfig(a.configFlag, a.getenv, a.home, a.config.forRun, a.config.uses)
		a.config.loaded = true
	}
	if a.config.err != nil {
		return nil, a.config.err
	}
	if cfg := a.config.cfg; cfg != nil {
		// Secrets from the config are known now: redact them from here on.
		if err := a.setup(cfg.Secrets...); err != nil {
			return nil, err
		}
	}
	return a.config.cfg, nil
}

// readConfig finds and loads the config, for fusebox run of the circuit
// forRun when it is not "", else for a command using the values of the
// circuits uses only when it is not nil.
func readConfig(flag string, getenv func(string) string, home string, forRun string, uses []string) (*config.Config, error) {
	path, _ := config.Find(flag, getenv, home)
	if path == "" {
		return nil, nil
	}
	var cfg *config.Config
	var err error
	switch {
	case forRun != "":
		cfg, err = config.LoadForRun(path, forRun)
	case uses != nil:
		cfg, err = config.LoadUsing(path, uses)
	default:
		cfg, err = config.Load(path)
	}
	if err != nil {
		return nil, &configError{err: err}
	}
	return cfg, nil
}

// stateDir resolves where circuit state lives: a dir, or a redis:// URL.
func (a *app) stateDir(cfg *config.Config) string {
	configured := ""
	if cfg != nil {
		configured = cfg.State
	}
	dir, _ := file.ResolveDir(a.stateFlag, configured, a.getenv, a.euid, a.home)
	return dir
}

// localDir is the state dir a process falls back to when its state is in
// Redis and Redis does not answer: the default dir, as if no state had been
// named.
func (a *app) localDir() string {
	getenv := func(k string) string {
		if k == "FUSEBOX_STATE_DIR" {
			return ""
		}
		return a.getenv(k)
	}
	dir, _ := file.ResolveDir("", "", getenv, a.euid, a.home)
	return dir
}

// stateShown is the state dir or URL as printed: a URL's password hidden.
func (a *app) stateShown(cfg *config.Config) string {
	state := a.stateDir(cfg)
	if redis.IsURL(state) {
		if u, err := url.Parse(state); err == nil {
			return u.Redacted()
		}
		return a.redactor.String(state)
	}
	return state
}

// openStore opens the state store, failing open (see package statestore).
func (a *app) openStore(cfg *config.Config) fusebox.Admin {
	return statestore.Open(a.storeOptions(cfg))
}

// storeOptions says where the state store of cfg is and how it is kept.
func (a *app) storeOptions(cfg *config.Config) statestore.Options {
	o := statestore.Options{Dir: a.stateDir(cfg), Fsync: true, Logger: a.logger, Clock: a.clock}
	if redis.IsURL(o.Dir) {
		o.LocalDir = a.localDir()
	}
	if cfg != nil {
		o.Fsync, o.GCAfter, o.EventsFor = cfg.Fsync, cfg.GCAfter, cfg.HistoryKeep
	}
	return o
}

// readState loads the config and opens the state store for a command that
// shows what the store holds (status, history, explain): a state dir not
// made yet stays unmade, and reads as an empty one. A store that failed
// open holds nothing to show: why is the error, with without (when not "")
// saying what that trouble means to the command's user. The caller closes
// the store.
func (a *app) readState(without string) (*config.Config, fusebox.Admin, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	o := a.storeOptions(cfg)
	o.ReadOnly = true
	store := statestore.Open(o)
	if err := statestore.Reason(store); err != nil {
		store.Close()
		if without != "" {
			return nil, nil, fmt.Errorf("state store: %w (%s)", err, without)
		}
		return nil, nil, fmt.Errorf("state store: %w", err)
	}
	return cfg, store, nil
}

// circuits returns the breakers of a command, kept in store.
func (a *app) circuits(store fusebox.Admin, opts ...fusebox.Option) *fusebox.Circuits {
	return fusebox.New(store, append([]fusebox.Option{fusebox.WithClock(a.clock), fusebox.WithLogger(a.logger)}, opts...)...)
}
