package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fusebox-hq/fusebox"
)

type runOptions struct {
	name   string
	argv   []string
	stream bool
	exits  exitCodes
	policy *policyFlags
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
command never prints twice); --stream passes every attempt's stdout through
as it comes. stderr passes through. Only the first attempt gets stdin.

A run whose first attempt succeeds prints nothing on stderr, so cron sends no
mail; failures, waits, skips and circuit changes are logged one line each.

Exit status: 0 success; the command's own status when every attempt failed;
124 the last attempt hit --timeout; 126/127 the command cannot be run or was
not found; 75 the circuit is open and nothing was run; 64 usage error; 78
config error; 130/143 interrupted (the signal is forwarded to the command).`,
		Example: `  fusebox run zigbee2mqtt -- curl -fsS http://zigbee.lan:8080/api/health
  fusebox run --attempts 5 --timeout 5s esp32-garage -- ./read-sensor.sh
  fusebox run --retry-on-exit 75,111 backup -- restic backup /home`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 && args[1] == "--" {
				args = args[1:]
			}
			if len(args) < 2 {
				return usageErrorf("run needs a circuit name and a command: fusebox run NAME -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name, o.argv = args[0], args[1:]
			if o.argv[0] == "--" {
				o.argv = o.argv[1:]
			}
			return runRun(cmd.Context(), a, o)
		},
	}
	addRunFlags(cmd.Flags(), o)
	return cmd
}

// addRunFlags adds run's own flags, for the command tree and the fast path.
func addRunFlags(fs *pflag.FlagSet, o *runOptions) {
	fs.SetInterspersed(false) // everything after NAME belongs to the command
	o.policy = addPolicyFlags(fs)
	fs.Var(&o.exits, "retry-on-exit", "exit `CODES` worth retrying, like 1,75 or 1-3 (default: any non-zero)")
	fs.BoolVar(&o.stream, "stream", false, "pass every attempt's stdout through as it comes")
}

// attemptExit is a failed attempt of the wrapped command.
type attemptExit struct {
	code   int // 124 when the attempt hit --timeout
	reason string
}

func (e *attemptExit) Error() string { return e.reason }

func runRun(ctx context.Context, a *app, o *runOptions) error {
	if err := fusebox.ValidateName(o.name); err != nil {
		return &usageError{msg: err.Error()}
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	policy := o.policy.apply(cfg.Policy(o.name))
	if err := o.policy.validate(policy); err != nil {
		return err
	}
	store := a.openStore(cfg)
	defer store.Close()
	circuits := fusebox.New(store,
		fusebox.WithPolicy(policy), fusebox.WithClock(a.clock), fusebox.WithLogger(a.logger))

	ctx, sig, stop := notifyInterrupt(ctx)
	defer stop()

	a.logger.Debug("running", "circuit", o.name, "command", strings.Join(a.redactor.Args(o.argv), " "))
	var last *spool
	defer func() {
		if last != nil {
			last.Close()
		}
	}()
	attempt := 0
	err = circuits.Do(ctx, o.name, func(actx context.Context) error {
		attempt++
		if last != nil {
			last.Close() // a failed attempt's stdout is discarded
			last = nil
		}
		c := &child{argv: o.argv, stderr: a.stderr, interrupt: sig}
		if attempt == 1 {
			c.stdin = a.stdin
		}
		if o.stream {
			c.stdout = a.stdout
		} else {
			last = &spool{}
			c.stdout = last
		}
		res := c.run(actx)
		return attemptFailure(res, &o.exits)
	})
	if last != nil {
		if _, werr := last.WriteTo(a.stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if s, ok := sig(); ok {
		return &interrupted{signal: int(s)}
	}
	return err
}

// attemptFailure turns an attempt's result into what Do needs to know.
func attemptFailure(res childResult, exits *exitCodes) error {
	if res.code == 0 && res.startErr == nil && !res.timedOut {
		return nil
	}
	ae := &attemptExit{code: res.code, reason: res.reason}
	switch {
	case res.startErr != nil:
		// The command is missing or not executable: retrying cannot help and
		// the circuit's endpoint did nothing wrong.
		return &fusebox.Failure{Err: ae, Permanent: true, Neutral: true}
	case res.timedOut:
		ae.code = exitTimeout
		return ae
	case !exits.retryable(res.code):
		return &fusebox.Failure{Err: ae, Permanent: true}
	}
	return ae
}

// notifyInterrupt cancels ctx on SIGINT or SIGTERM and remembers which
// signal came, so it can be forwarded to the child and become the exit
// status.
func notifyInterrupt(parent context.Context) (context.Context, func() (syscall.Signal, bool), func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	var mu sync.Mutex
	var got syscall.Signal
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s.(syscall.Signal)
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	sig := func() (syscall.Signal, bool) {
		mu.Lock()
		defer mu.Unlock()
		return got, got != 0
	}
	stop := func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
	return ctx, sig, stop
}
