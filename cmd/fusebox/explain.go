package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config/explain"
	"github.com/fusebox-hq/fusebox/serve"
)

type explainOptions struct {
	name     string
	policy   *policyFlags
	skipExit int
	json     bool
}

func newExplainCmd(a *app) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain NAME [run or call flags]",
		Short: "Say what a run or call of NAME would do now, and why, and where each value of its policy comes from",
		Long: `Explain answers "why did my job not run?" without reading the state files.

For a circuit, an endpoint or each endpoint of a chain it prints what a run or
call would do at this moment ("would run", "would skip until 14:03:10: opened
by 3 consecutive failures, last: ...", "would probe"), then every value of the
effective policy with where it came from: a flag (give explain the flags the
run or call uses), the config (FILE:LINE and key), or the built-in default;
and the state dir and config file with theirs (flag, environment, config,
default). For a chain, its own deadline, hedge, fresh and stale come first,
with theirs. It says the longest a run or call can take and where that
comes from (attempts x timeout + the longest backoff waits, the deadline, a
chain's shared deadline) and, for an endpoint or chain, the longest fusebox
serve takes for a caller that declares no wait. It changes nothing: no
probe is taken, no state written.

--json prints one object: name, kind, action (run, skip or probe), phase,
until (RFC 3339, when a skip ends), why, skip_exit, state and config ({value,
source}), policy (an array of {key, value, source, flag, file, line,
config_key, and learned for open_for: auto}; for a chain, its own four values),
longest ({seconds, from, serve_seconds}) and, for a chain, endpoints (each with its own action, phase, until, why and
policy).`,
		Example: `  fusebox explain zigbee2mqtt
  fusebox explain zigbee2mqtt --attempts 5 --timeout 3s   # as a run with those flags would
  fusebox explain weather --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("explain takes one NAME, got %d arguments", len(args))
			}
			if err := fusebox.ValidateName(args[0]); err != nil {
				return &usageError{msg: err.Error()}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return runExplain(cmd.Context(), a, o)
		},
	}
	fs := cmd.Flags()
	o.policy = addPolicyFlags(fs)
	fs.IntVar(&o.skipExit, "skip-exit", exitOpen, "as run's --skip-exit: the exit `STATUS` of a skipped run")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	cmd.ValidArgsFunction = completeNames(a, false, false)
	return cmd
}

func runExplain(ctx context.Context, a *app, o *explainOptions) error {
	if o.skipExit < 0 || o.skipExit > 255 {
		return usageErrorf("--skip-exit: want an exit status from 0 to 255, got %d", o.skipExit)
	}
	cfg, opened, err := a.readState("a run would go on without circuit protection")
	if err != nil {
		return err
	}
	defer opened.Close()
	store := explain.ReadOnly(opened) // the name check below repairs nothing either
	if err := unknownName(ctx, cfg, store, o.name, "a run of a new name runs under the defaults"); err != nil {
		return err
	}
	e, err := explain.Build(ctx, explain.Request{
		Name:   o.name,
		Config: cfg,
		Store:  store,
		Now:    a.clock.Now(),
		Flags: explain.Flags{
			Policy: func(p fusebox.Policy) (fusebox.Policy, error) {
				p = o.policy.apply(p)
				return p, o.policy.validate(p)
			},
			Given:    o.policy.fs.Changed,
			SkipExit: o.skipExit,
		},
		Env:         explain.Env{StateFlag: a.stateFlag, ConfigFlag: a.configFlag, Getenv: a.getenv, EUID: a.euid, Home: a.home},
		StateShown:  a.stateShown(cfg),
		ServeBudget: serve.CallBudget(serve.DefaultWait),
	})
	if err != nil {
		return err
	}
	if o.json {
		return explain.WriteJSON(a.stdout, e)
	}
	return explain.WriteText(a.stdout, e)
}
