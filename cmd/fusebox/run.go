package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/logging"
	"github.com/fusebox-hq/fusebox/runner"
)

type runOptions struct {
	name     string
	argv     []string
	stream   bool
	skipExit int
	skipTold bool
	exits    runner.ExitCodes
	policy   *policyFlags
}

func newRunCmd(a *app) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] NAME -- COMMAND [ARGS...]",
		Short: "Run a command under a circuit breaker, with retries",
		Long: `Run COMMAND under circuit NAME: retry it with backoff while it fails, and
skip it at once (exit 75, nothing run) while the circuit is open.

COMMAND is executed directly, never through a shell, in its own process group.
Only the stdout of the attempt that ends the call is printed (a retried
command never prints twice). The command's stderr is held too and printed
once the run knows it is news: a success prints its final attempt's stderr;
a failure that opens the circuit, or fails while it stays closed, prints
every attempt's; a failure while the circuit is open (a failed probe, or a
run another's failure overtook) prints none. When stderr is a terminal it
passes through as it comes; --stream passes every attempt's stdout and
stderr through as they come. Only the first attempt gets stdin.

A run that succeeds (also after retries) or is skipped prints nothing of
fusebox's own on stderr, so cron sends no mail; a run that finally fails
prints one line with its reason, unless its circuit is open (the outage was
told), and the run that opens or closes the circuit says so. -v logs every
attempt, wait and skip.

Exit status: 0 success; the command's own status when every attempt failed;
124 the last attempt hit --timeout; 126/127 the command cannot be run or was
not found; 75 the circuit is open and nothing was run (--skip-exit; with
--skip-told, also a failure while it was open already); 64 usage error;
128+N interrupted by signal N (HUP, INT, QUIT, TERM: forwarded to the
command's process group); 141 stdout or stderr is a closed pipe. A broken or
unreadable config is reported on one line, and the command runs under the
built-in defaults and the flags given.`,
		Example: `  fusebox run zigbee2mqtt -- curl -fsS -o /dev/null http://zigbee.lan:8080/api/health
  fusebox run --attempts 5 --timeout 5s esp32-garage -- ./read-sensor.sh
  fusebox run --retry-on-exit 75,111 backup -- restic backup /home`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().ArgsLenAtDash() == 0 && len(args) > 0 {
				// "fusebox run -- curl -fsS URL": NAME forgotten, not a
				// circuit named after the command running its flags.
				return usageErrorf("run needs a circuit NAME before --: fusebox run NAME -- %s ...", args[0])
			}
			name, argv, err := splitRunArgs(cmd.Flags(), args)
			if err != nil {
				return err
			}
			o.name, o.argv = name, argv
			if err := a.setup(); err != nil { // a -v or -q after NAME
				return err
			}
			return runRun(cmd.Context(), a, o)
		},
	}
	addRunFlags(cmd.Flags(), o)
	cmd.ValidArgsFunction = completeNames(a, false, false)
	return cmd
}

// splitRunArgs splits what follows run's flags into NAME and the runner.
// Flags may also stand between NAME and "--" (fusebox run x --attempts 2 --
// cmd): they are parsed into fs as if they came before NAME. Without "--",
// or when the word after NAME is not a flag, everything after NAME is the
// command, as it comes.
func splitRunArgs(fs *pflag.FlagSet, args []string) (name string, argv []string, err error) {
	if len(args) > 1 && args[1] != "--" && strings.HasPrefix(args[1], "-") {
		if end := slices.Index(args, "--"); end > 1 {
			if err := fs.Parse(args[1:end]); err != nil {
				return "", nil, flagSetError(fs, err)
			}
			if rest := fs.Args(); len(rest) > 0 {
				return "", nil, usageErrorf("run: %q between NAME and -- is not a flag; the command goes after --", rest[0])
			}
			args = append(args[:1:1], args[end:]...)
		}
	}
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if len(args) < 2 {
		return "", nil, usageErrorf("run needs a circuit name and a command: fusebox run NAME -- COMMAND [ARGS...]")
	}
	return args[0], args[1:], nil
}

// addRunFlags adds run's own flags.
func addRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.SetInterspersed(false) // everything after NAME belongs to the command
	o.policy = addPolicyFlags(fs)
	fs.Var(&o.exits, "retry-on-exit", "exit `CODES` worth retrying, like 1,75 or 1-3 (default: any non-zero)")
	fs.BoolVar(&o.stream, "stream", false, "pass every attempt's stdout and stderr through as they come")
	fs.IntVar(&o.skipExit, "skip-exit", exitOpen, "exit `STATUS` of a run skipped because the circuit is open, for a command whose own 75 means something")
	fs.BoolVar(&o.skipTold, "skip-told", false, "exit as a skip when the run failed with its circuit open already (a failed probe, a run another's failure overtook): for a scheduler that reports every non-zero exit")
}

func runRun(ctx context.Context, a *app, o *runOptions) error {
	if err := fusebox.ValidateName(o.name); err != nil {
		return &usageError{msg: err.Error()}
	}
	a.config.forRun = o.name // run evaluates no jq and reads only its own circuit
	cfg, err := a.loadConfig()
	if cfe := (*configError)(nil); errors.As(err, &cfe) {
		// fusebox never loses a call because of itself: a broken config
		// costs the config, not the runner.
		logConfigFallback(a, cfe)
		cfg, err = nil, nil
	}
	if err != nil {
		return err
	}
	policy := o.policy.apply(cfg.Policy(o.name))
	if err := o.policy.validate(policy); err != nil {
		return err
	}
	if o.skipExit < 0 || o.skipExit > 255 {
		return usageErrorf("--skip-exit: want an exit status from 0 to 255, got %d", o.skipExit)
	}
	store := a.openStore(cfg)
	defer store.Close()
	n := a.newNotifier(cfg, store)
	circuits := fusebox.New(store, append(n.listener(),
		fusebox.WithPolicy(policy), fusebox.WithClock(a.clock), fusebox.WithLogger(a.logger))...)

	ctx, sig, stop := runner.NotifyInterrupt(ctx)
	if !a.exits {
		// Stopping costs a round trip with the runtime's signal thread for
		// each signal: a process that exits next keeps watching to the end.
		defer stop()
	}

	if a.logger.Enabled(ctx, slog.LevelDebug) {
		// Redacting compiles the credential patterns: only for a line printed.
		a.logger.Debug("running", "circuit", o.name, "command", strings.Join(a.redactor.Args(o.argv), " "))
	}
	err = runner.Run(ctx, circuits, o.name, runner.Spec{
		Argv: o.argv, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr,
		Stream: o.stream, StderrLive: isTerminal(a.stderrFile), Trouble: func(err error) {
			a.logger.Error("cannot hold the command's output; passing it through as it comes", "circuit", o.name, "err", err)
		},
		RetryOnExit: o.exits, Interrupt: sig, Redact: a.redactor.String,
		EndDescendants: true, Warn: func(err error) { a.logger.Warn(err.Error(), "circuit", o.name) },
	})
	logFailed(a, o.name, err)
	n.finish(circuits, []string{o.name}, err) // the command's output is written
	if errors.Is(err, breaker.ErrOpen) || o.skipTold && told(err) {
		return skipped(o, cfg, o.name, err)
	}
	return err
}

// told reports whether err is a failure whose outage was told already: the
// circuit was open when it ended (see fusebox.ExhaustedError).
func told(err error) bool {
	var ee *fusebox.ExhaustedError
	return errors.As(err, &ee) && (ee.Reopened || ee.Overtaken)
}

// skipped is the error of a run skipped because the circuit is open: it
// exits with --skip-exit, else the circuit's skip_exit, else 75.
func skipped(o *runOptions, cfg *config.Config, name string, err error) error {
	code := exitOpen
	if c, ok := cfg.SkipExit(name); ok {
		code = c
	}
	if o.policy.fs.Changed("skip-exit") {
		code = o.skipExit
	}
	return &skipError{code: code, err: err}
}

// logFailed logs the one line a run that finally failed prints by default,
// with its reason. A success, a skip (exit 75 says it) and an interrupt
// print nothing here, and a failure while the circuit is open (a failed
// probe, or a run another's failure overtook) only with -v: the outage was
// told when the circuit opened.
func logFailed(a *app, name string, err error) {
	var ee *fusebox.ExhaustedError
	if !errors.As(err, &ee) {
		return
	}
	level := slog.LevelWarn
	if ee.Reopened || ee.Overtaken {
		level = slog.LevelInfo
	}
	a.logger.Log(context.Background(), level, "failed", "circuit", name, "reason", ee.Describe(""))
}

// logConfigFallback says, on one line, that run goes on without the config:
// its first problem (file:line, key and what is wrong), how many more there
// are, and where to see them all.
func logConfigFallback(a *app, cfe *configError) {
	problems := []error{cfe.err}
	if j, ok := cfe.err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	}
	args := []any{"problem", strings.ReplaceAll(problems[0].Error(), "\n", " ")}
	if len(problems) > 1 {
		args = append(args, "more_problems", len(problems)-1)
	}
	args = append(args, "fix", "correct the config; fusebox validate lists every problem")
	// The config loader hides the values it expanded, and no secret is known
	// yet: the credential patterns would only garble "!secret NAME" here.
	plain := logging.New(a.stderr, a.log, nil, logging.JournalStream(a.getenv, a.stderrFile))
	plain.Error("config not used: running under the built-in defaults and the flags given, circuit protection on", args...)
}

// isTerminal reports whether f is a terminal: a person is watching, and
// the command's stderr passes through as it comes.
func isTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), getTermios)
	return err == nil
}
