package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/failopen"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/logging"
	"github.com/fusebox-hq/fusebox/redis"
)

// fastRun handles "fusebox run NAME -- COMMAND", what cron runs, before the
// command tree is built: it parses run's flags (the same pflag set the
// tree uses, without the tree), and on an open circuit skips after reading
// one state file; on any other it runs runRun itself, as run's RunE would.
// It reports false (and has done nothing) whenever it is not sure; the full
// command then decides.
//
// It is a second way through run, kept because the command tree does not
// come within 0.2 ms of the exit-at-main floor (issue 23). Whole-process
// timings, 2026-12-02, a shared 2-core machine, 100 alternating pairs each,
// medians, "fusebox run NAME -- true" on a circuit forced open, no config:
// with the fast path 1.03x, 1.09x and 1.14x the -tags fusebox_exitatmain
// build (about +0.2 to +0.7 ms on its 5-6 ms); through the command tree
// 1.31x the floor and 1.34x the fast path (about +1.5 ms). In process,
// building the tree alone costs 0.11-0.23 ms, the tree's whole run to the
// skip 0.47-0.74 ms, the fast path's 0.05-0.26 ms. To time it again: build
// once as is and once with main's call of fastRun removed, and run both
// against the floor build in turn (BenchmarkFailFastProcess has the setup).
// FuzzFastParse checks that wherever it decides, the tree decides alike.
func fastRun(ctx context.Context, a *app, args []string) (int, bool) {
	o, _, ok := fastParse(a, args)
	if !ok {
		return 0, false
	}
	a.config.forRun = o.name
	if code, ok := fastSkip(a, o, o.name); ok {
		return code, true
	}
	// What run's RunE does once the tree has parsed the same flags; the
	// process exits when it returns.
	a.exits = true
	if err := a.setup(); err != nil {
		return report(a, err), true
	}
	return report(a, runRun(ctx, a, o)), true
}

// fastParse parses args as the command tree would parse "fusebox run NAME
// -- COMMAND", into a's global flags and the returned options (name and
// argv set) and flag set. It reports false when it is not sure: not run,
// --help, a usage error, or a value run itself rejects. FuzzFastParse
// checks that where it reports true, cobra's parse of the same args reaches
// run's RunE with the same name, command and flags.
func fastParse(a *app, args []string) (*runOptions, *pflag.FlagSet, bool) {
	if len(args) < 3 || args[0] != "run" {
		return nil, nil, false
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addGlobalFlags(fs, a)
	o := &runOptions{}
	addRunFlags(fs, o)
	if fs.Parse(args[1:]) != nil {
		return nil, nil, false // --help, or a usage error the full command reports
	}
	name, argv, err := splitRunArgs(fs, fs.Args())
	if err != nil || fusebox.ValidateName(name) != nil || a.log.Validate() != nil || o.skipExit < 0 || o.skipExit > 255 {
		return nil, nil, false
	}
	o.name, o.argv = name, argv
	return o, fs, true
}

// fastSkip skips the run when the circuit is open, having read one state
// file (and the config, when it may name the state dir).
func fastSkip(a *app, o *runOptions, name string) (int, bool) {
	var cfg *config.Config
	if a.stateFlag == "" && a.getenv("FUSEBOX_STATE_DIR") == "" {
		// The config may name the state dir.
		c, err := a.loadConfig()
		if err != nil {
			return 0, false
		}
		cfg = c
	}
	// The only line logged here is the skip: a validated name and a duration,
	// nothing to redact.
	a.logger = logging.New(a.stderr, a.log, nil, logging.JournalStream(a.getenv, a.stderrFile))
	store, ok := fastStore(a, a.stateDir(cfg))
	if !ok {
		return 0, false
	}
	circuits := fusebox.New(store, fusebox.WithClock(a.clock), fusebox.WithLogger(a.logger))
	err := circuits.Check(context.Background(), name)
	if redis.IsURL(a.stateDir(cfg)) && !errors.Is(err, fusebox.ErrOpen) {
		// Falling through: hand the store, connected or known to be
		// away, to the full command.
		a.shared = store
		return 0, false
	}
	store.Close()
	if errors.Is(err, fusebox.ErrOpen) {
		if cfg == nil && !o.policy.fs.Changed("skip-exit") {
			// The skip's exit status may be the config's, not read for the
			// state dir: only its skip_exit is looked for (a broken config
			// leaves 75).
			code := exitOpen
			if path, _ := config.Find(a.configFlag, a.getenv, a.home); path != "" {
				if c, ok := config.SkipExitForRun(path, name); ok {
					code = c
				}
			}
			return code, true
		}
		code, _ := exitCode(skipped(o, cfg, name, err))
		return code, true
	}
	return 0, false
}

// fastStore opens the state for the fast path, creating nothing but, for a
// redis:// state, the local replica it falls back to (see package failopen):
// its availability circuit says at once whether to ask Redis at all.
func fastStore(a *app, dir string) (fusebox.Admin, bool) {
	if redis.IsURL(dir) {
		s := failopen.Open(failopen.Options{Dir: dir, LocalDir: a.localDir(), Fsync: true, Logger: a.logger, Clock: a.clock})
		return s, failopen.Reason(s) == nil
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, false // no state yet, so no open circuit; and nothing is created here
	}
	s, err := file.Open(dir, file.WithLogger(a.logger))
	return s, err == nil
}
