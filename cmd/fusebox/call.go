package main

import (
	"context"
	"errors"
	"log/slog"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/runner"
)

type callOptions struct {
	name    string
	url     string
	asJSON  bool
	noStale bool
	noFresh bool
	// unansweredExit, when set, is the exit status of a call nothing
	// answered, for a caller that reports every non-zero exit.
	unansweredExit int
	policy         *policyFlags
}

func newCallCmd(a *app) *cobra.Command {
	o := &callOptions{}
	cmd := &cobra.Command{
		Use:   "call [flags] NAME",
		Short: "Call an HTTP endpoint or a fallback chain from the config",
		Long: `Call NAME, an HTTP endpoint (a circuit with an http: block) or a chain of them
from the config, and print the answer's body (or its extract:) on stdout.

A chain tries its endpoints in order and skips, instantly, each one whose
circuit is open; with hedge:, the next also starts beside one that has not
answered in time, and the first answer wins. When every endpoint fails, a
chain with stale: serves the last good answer while it is younger than that;
with fresh:, a recent answer is served without calling at all.

A call that answers prints nothing on stderr, also when a chain's endpoint
opened its circuit on the way (that is in the event log and status); one that
fails prints the openings it caused and one line with every endpoint's
reason. -v shows which endpoint answered, each failure and each skip.
Secrets never appear: values from ${VAR}, ${file:...} and !secret,
Authorization headers and secret-looking query parameters are shown as
REDACTED.

--json prints an envelope: source (the endpoint, or fresh / stale), status,
attempts, age_seconds (answers from the store), body (parsed JSON when it is
JSON, else a string) and errors (name and reason of each endpoint that failed,
was skipped, or was cancelled as a hedge another endpoint's answer beat).

Exit status: 0 answered (also from stale; --no-stale refuses it), 69 every
endpoint failed, 75 every endpoint was skipped (circuits open) and nothing
stale was kept (--unanswered-exit chooses another for both), 64 usage error,
78 config error.`,
		Example: `  fusebox call weather
  fusebox call --json weather | jq .source
  fusebox call --url http://192.168.1.50/json esp32-garage`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("call needs exactly one endpoint or chain name, got %d", len(args))
			}
			if err := fusebox.ValidateName(args[0]); err != nil {
				return &usageError{msg: err.Error()}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return runCall(cmd.Context(), a, o)
		},
	}
	cmd.ValidArgsFunction = completeNames(a, true, false)
	fs := cmd.Flags()
	o.policy = addPolicyFlags(fs)
	fs.StringVar(&o.url, "url", "", "call `URL` as an ad-hoc endpoint named NAME, without config")
	fs.BoolVar(&o.asJSON, "json", false, "print a JSON envelope instead of the body")
	fs.BoolVar(&o.noStale, "no-stale", false, "never answer with a stale stored response")
	fs.BoolVar(&o.noFresh, "no-fresh", false, "call the endpoints even when a fresh stored answer exists")
	fs.IntVar(&o.unansweredExit, "unanswered-exit", exitUnavailable, "exit `STATUS` of a call nothing answered, instead of 69 (every endpoint failed) or 75 (every endpoint skipped): 0 for Home Assistant's command_line, with --json")
	return cmd
}

func runCall(ctx context.Context, a *app, o *callOptions) error {
	if o.unansweredExit < 0 || o.unansweredExit > 255 {
		return usageErrorf("--unanswered-exit: want an exit status from 0 to 255, got %d", o.unansweredExit)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	endpoints, chains, err := callTargets(cfg, o)
	if err != nil {
		return err
	}
	store := a.openStore(cfg)
	defer store.Close()
	n := a.newNotifier(cfg, store)
	logger, held := a.logger, (*heldLog)(nil)
	if hasFallback(endpoints, chains, o.name) && !a.logger.Enabled(ctx, slog.LevelInfo) {
		// Without -v, which shows every line as it comes: an endpoint's
		// transitions behind an answered fallback are not this call's news.
		logger, held = holdTransitions(a.logger)
	}
	opts := []httpcall.Option{httpcall.WithLogger(logger), httpcall.WithClock(a.clock), httpcall.WithRedactor(a.redactor)}
	if n != nil {
		opts = append(opts, httpcall.WithListener(n.sender.Listen))
	}
	client, err := httpcall.New(store, endpoints, chains, opts...)
	if err != nil {
		return &configError{err: err}
	}
	err = a.call(ctx, client, o, held)
	n.finish(client.Circuits(), []string{o.name}, err) // the answer is written
	var ce *httpcall.CallError
	if errors.As(err, &ce) && o.policy.fs.Changed("unanswered-exit") {
		return &skipError{code: o.unansweredExit, err: err}
	}
	return err
}

// hasFallback reports whether name is a chain, or an endpoint with stale:,
// whose call something else may answer when an endpoint fails.
func hasFallback(endpoints []*httpcall.Endpoint, chains []*httpcall.Chain, name string) bool {
	for _, ch := range chains {
		if ch.Name == name {
			return true
		}
	}
	for _, ep := range endpoints {
		if ep.Name == name {
			return ep.Stale > 0
		}
	}
	return false
}

// call makes the call and writes its answer. held, when not nil, holds the
// lines of the call's transitions: printed before a failure's line, dropped
// when the call answered (they are in the event log and status).
func (a *app) call(ctx context.Context, client *httpcall.Client, o *callOptions, held *heldLog) error {
	// Signals matter once a request is made (or a probe lease held for
	// it): a call every open circuit skips installs no handler.
	ctx, sig, arm, stop := runner.LazyInterrupt(ctx)
	if !a.exits {
		// Stopping costs a round trip with the runtime's signal thread for
		// each signal: a process that exits next keeps watching to the end.
		defer stop()
	}
	res, err := client.Call(ctx, o.name, httpcall.CallOptions{NoStale: o.noStale, NoFresh: o.noFresh, BeforeRequest: arm})
	if held != nil {
		held.release(err != nil)
	}
	if s, ok := sig(); ok {
		return &runner.Interrupted{Signal: s}
	}
	if o.asJSON && res != nil {
		env, jerr := res.Envelope()
		if jerr != nil {
			return jerr
		}
		if _, werr := a.stdout.Write(append(env, '\n')); werr != nil {
			return werr // the envelope is the answer, failure included: its reader went away
		}
		return err
	}
	if err != nil {
		var ce *httpcall.CallError
		if errors.As(err, &ce) {
			// The call's one failure line; an outage already told (every
			// circuit open, or reopened by this call's probe) needs -v.
			level := slog.LevelWarn
			if ce.Told() {
				level = slog.LevelInfo
			}
			a.logger.Log(ctx, level, ce.Error())
		}
		return err
	}
	body := res.Body
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	_, err = a.stdout.Write(body)
	return err
}

// callTargets returns the endpoints and chains a call may use: those of the
// config, with policy flags applied, or the ad-hoc --url endpoint.
func callTargets(cfg *config.Config, o *callOptions) ([]*httpcall.Endpoint, []*httpcall.Chain, error) {
	if o.url != "" {
		u, err := url.Parse(o.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, usageErrorf("--url: want an http:// or https:// URL, got %q", o.url)
		}
		policy := o.policy.apply(cfg.Policy(o.name))
		if err := o.policy.validate(policy); err != nil {
			return nil, nil, err
		}
		ep := &httpcall.Endpoint{
			Name: o.name, URL: o.url, Method: "GET", RetryOn: httpcall.DefaultRetryOn(),
			MaxBody: httpcall.DefaultMaxBody, Policy: policy,
		}
		return []*httpcall.Endpoint{ep}, nil, nil
	}
	if err := cfg.Callable(o.name); err != nil {
		return nil, nil, &usageError{msg: err.Error()}
	}
	endpoints, chains := cfg.Callables()
	for _, ep := range endpoints {
		ep.Policy = o.policy.apply(ep.Policy)
		if err := o.policy.validate(ep.Policy); err != nil {
			return nil, nil, err
		}
	}
	return endpoints, chains, nil
}
