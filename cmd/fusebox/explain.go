package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/statestore"
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
with theirs. It changes nothing: no probe is taken, no state written.

--json prints one object: name, kind, action (run, skip or probe), phase,
until (RFC 3339, when a skip ends), why, skip_exit, state and config ({value,
source}), policy (an array of {key, value, source, flag, file, line,
config_key, and learned for open_for: auto}; for a chain, its own four values)
and, for a chain, endpoints (each with its own action, phase, until, why and
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

// explanation is explain's document; its JSON is the --json output.
type explanation struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"` // circuit, endpoint or chain
	Action   string        `json:"action,omitempty"`
	Phase    string        `json:"phase,omitempty"`
	Until    *time.Time    `json:"until,omitempty"`
	Why      string        `json:"why,omitempty"`
	SkipExit *int          `json:"skip_exit,omitempty"` // what a skipped run exits with (circuits only)
	State    valueSource   `json:"state"`
	Config   valueSource   `json:"config"`
	Policy   []policyValue `json:"policy,omitempty"`
	// Endpoints are a chain's, in the order it tries them.
	Endpoints []explanation `json:"endpoints,omitempty"`
	// Watched says the daemon opens and closes the circuit from an MQTT
	// topic (health: mqtt:).
	Watched *watched `json:"watched,omitempty"`
}

type watched struct {
	Topic string `json:"topic"`
	Up    string `json:"up"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

type valueSource struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// policyValue is one effective value of a policy, and where it came from:
// "flag" (Flag), "config" (File, Line, ConfigKey) or "default".
type policyValue struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Flag      string `json:"flag,omitempty"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	ConfigKey string `json:"config_key,omitempty"`
	// Learned says how a learned value (open_for: auto) was learned.
	Learned string `json:"learned,omitempty"`
}

func runExplain(ctx context.Context, a *app, o *explainOptions) error {
	if o.skipExit < 0 || o.skipExit > 255 {
		return usageErrorf("--skip-exit: want an exit status from 0 to 255, got %d", o.skipExit)
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return err
	}
	opened := a.openStore(cfg)
	defer opened.Close()
	if err := statestore.Reason(opened); err != nil {
		return fmt.Errorf("state store: %w (a run would go on without circuit protection)", err)
	}
	store := readOnly{opened}
	if err := unknownName(ctx, cfg, store, o.name, "a run of a new name runs under the defaults"); err != nil {
		return err
	}
	e := explanation{Name: o.name, Kind: "circuit", State: a.stateSource(cfg), Config: a.configSource(cfg)}
	var endpoints []string
	switch {
	case cfg != nil && cfg.Chains[o.name] != nil:
		e.Kind, endpoints = "chain", cfg.Chains[o.name].Endpoints
	case cfg != nil && cfg.Circuits[o.name] != nil && cfg.Circuits[o.name].Endpoint != nil:
		e.Kind = "endpoint"
	}
	now := a.clock.Now()
	explainOne := func(x *explanation, name string) error {
		p := o.policy.apply(cfg.Policy(name))
		if err := o.policy.validate(p); err != nil {
			return err
		}
		p = p.WithDefaults()
		st, err := store.Load(ctx, name)
		damaged := errors.Is(err, file.ErrDamaged)
		if err != nil && !damaged {
			return fmt.Errorf("read the state of %s: %w", name, err)
		}
		v := st.Explain(p.Breaker, now)
		x.Action, x.Phase, x.Why = string(v.Action), string(v.Phase), v.Why
		if damaged {
			x.Why = err.Error() + ": a run moves it aside and starts afresh; " + v.Why
		}
		if !v.Until.IsZero() {
			x.Until = &v.Until
		}
		x.Policy = o.policy.sources(cfg, name, p)
		if p.Breaker.LearnOpenFor {
			d, how := st.LearnedOpenFor(p.Breaker)
			for i := range x.Policy {
				if x.Policy[i].Key == "open_for" {
					x.Policy[i].Value, x.Policy[i].Learned = "auto: "+d.String(), how
				}
			}
		}
		return nil
	}
	if e.Kind == "chain" {
		e.Policy = chainValues(cfg, o.name)
		for _, n := range endpoints {
			x := explanation{Name: n, Kind: "endpoint"}
			if err := explainOne(&x, n); err != nil {
				return err
			}
			e.Endpoints = append(e.Endpoints, x)
		}
	} else {
		if err := explainOne(&e, o.name); err != nil {
			return err
		}
		code := o.skipExit
		if c, ok := cfg.SkipExit(o.name); ok && !o.policy.fs.Changed("skip-exit") {
			code = c
		}
		e.SkipExit = &code
		e.Policy = append(e.Policy, skipExitSource(cfg, o, code))
		if w := cfg.Watch(o.name); w != nil {
			src, _ := cfg.PolicySource(o.name, "health.mqtt.up")
			e.Watched = &watched{Topic: w.Topic, Up: w.Up, File: src.File, Line: src.Line}
		}
	}
	if o.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}
	return writeExplanation(a.stdout, e)
}

// readOnly is the store explain reads: one that can read a state without
// repairing it (file.Store.Peek) does so, so that explain changes nothing
// and reports a damaged state file instead of moving it aside.
type readOnly struct{ fusebox.Admin }

func (r readOnly) Load(ctx context.Context, name string) (fusebox.State, error) {
	if p, ok := r.Admin.(interface {
		Peek(context.Context, string) (fusebox.State, error)
	}); ok {
		return p.Peek(ctx, name)
	}
	return r.Admin.Load(ctx, name)
}

// stateSource is the state dir or URL (its password hidden) and what chose
// it.
func (a *app) stateSource(cfg *config.Config) valueSource {
	configured := ""
	if cfg != nil {
		configured = cfg.State
	}
	_, source := file.ResolveDir(a.stateFlag, configured, a.getenv, a.euid, a.home)
	switch source {
	case "config":
		source = "config " + cfg.Path + " (state)"
	case "--state":
		source = "flag --state"
	case "$FUSEBOX_STATE_DIR", "$STATE_DIRECTORY", "$XDG_STATE_HOME", "$HOME":
		source = "env " + source
	}
	return valueSource{Value: a.stateShown(cfg), Source: source}
}

// configSource is the config file and what chose it.
func (a *app) configSource(cfg *config.Config) valueSource {
	path, explicit := config.Find(a.configFlag, a.getenv, a.home)
	switch {
	case path == "":
		return valueSource{Value: "none", Source: "default (no ~/.config/fusebox/config.yaml or /etc/fusebox/config.yaml)"}
	case a.configFlag != "":
		return valueSource{Value: path, Source: "flag --config"}
	case explicit:
		return valueSource{Value: path, Source: "env $FUSEBOX_CONFIG"}
	}
	return valueSource{Value: path, Source: "default"}
}

// policyKeys are the keys explain lists, in the config's words, with the
// flag that sets each (if any) and how to print its value.
var explainKeys = []struct {
	key, flag string
	value     func(fusebox.Policy) (string, bool) // false: not in effect
}{
	{"attempts", "attempts", func(p fusebox.Policy) (string, bool) { return strconv.Itoa(p.Retry.Attempts), true }},
	{"backoff", "backoff", func(p fusebox.Policy) (string, bool) { return p.Retry.Backoff.First.String(), true }},
	{"multiplier", "", func(p fusebox.Policy) (string, bool) { return fmtFloat(p.Retry.Backoff.Multiplier), true }},
	{"max_delay", "max-delay", func(p fusebox.Policy) (string, bool) { return p.Retry.Backoff.Max.String(), true }},
	{"jitter", "jitter", func(p fusebox.Policy) (string, bool) { return string(p.Retry.Backoff.Jitter), true }},
	{"timeout", "timeout", func(p fusebox.Policy) (string, bool) { return p.Retry.Timeout.String(), true }},
	{"deadline", "deadline", func(p fusebox.Policy) (string, bool) { return p.Retry.Deadline.String(), true }},
	{"retry_budget.percent", "retry-budget", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return fmtFloat(rb.Percent*100) + "%" })
	}},
	{"retry_budget.min", "", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return strconv.Itoa(rb.Min) })
	}},
	{"retry_budget.window", "", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return rb.Window.String() })
	}},
	{"trip_after", "trip-after", func(p fusebox.Policy) (string, bool) {
		return strconv.Itoa(p.Breaker.TripAfter), p.Breaker.FailureRate == nil
	}},
	{"failure_rate.threshold", "", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return fmtFloat(fr.Threshold*100) + "%" })
	}},
	{"failure_rate.window", "", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return strconv.Itoa(fr.Window) })
	}},
	{"failure_rate.min_attempts", "", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return strconv.Itoa(fr.MinAttempts) })
	}},
	{"open_for", "open-for", func(p fusebox.Policy) (string, bool) { return p.Breaker.OpenFor.String(), true }},
	{"open_multiplier", "", func(p fusebox.Policy) (string, bool) { return fmtFloat(p.Breaker.OpenMultiplier), true }},
	{"open_max", "open-max", func(p fusebox.Policy) (string, bool) { return p.Breaker.OpenMax.String(), true }},
	{"probes", "", func(p fusebox.Policy) (string, bool) { return strconv.Itoa(p.Breaker.Probes), true }},
	{"probe_lease", "", func(p fusebox.Policy) (string, bool) { return p.Breaker.ProbeLease.String(), true }},
}

func ifRate(fr *fusebox.FailureRate, f func() string) (string, bool) {
	if fr == nil {
		return "", false
	}
	return f(), true
}

func ifBudget(rb *fusebox.RetryBudget, f func() string) (string, bool) {
	if rb == nil {
		return "", false
	}
	return f(), true
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// sources lists p's values for the circuit name, each with where it came
// from: a flag given to this command, the config, or the default.
func (pf *policyFlags) sources(cfg *config.Config, name string, p fusebox.Policy) []policyValue {
	var out []policyValue
	for _, k := range explainKeys {
		v, ok := k.value(p)
		if !ok {
			continue
		}
		pv := policyValue{Key: k.key, Value: v, Source: "default"}
		switch src, inConfig := cfg.PolicySource(name, k.key); {
		case k.flag != "" && pf.fs.Changed(k.flag):
			pv.Source, pv.Flag = "flag", "--"+k.flag
		case k.key == "open_max" && pf.fs.Changed("open-for") && p.Breaker.OpenMax == p.Breaker.OpenFor:
			pv.Source, pv.Flag = "flag", "--open-for" // raised to it
		case inConfig:
			pv.Source, pv.File, pv.Line, pv.ConfigKey = "config", src.File, src.Line, src.Key
		case k.key == "probe_lease":
			pv.Source = "default (timeout + 2s)"
		}
		out = append(out, pv)
	}
	return out
}

func skipExitSource(cfg *config.Config, o *explainOptions, code int) policyValue {
	pv := policyValue{Key: "skip_exit", Value: strconv.Itoa(code), Source: "default"}
	if o.policy.fs.Changed("skip-exit") {
		pv.Source, pv.Flag = "flag", "--skip-exit"
	} else if src, ok := cfg.PolicySource(o.name, "skip_exit"); ok {
		pv.Source, pv.File, pv.Line, pv.ConfigKey = "config", src.File, src.Line, src.Key
	}
	return pv
}

// chainValues are a chain's own deadline, hedge, fresh and stale, and
// where each came from.
func chainValues(cfg *config.Config, name string) []policyValue {
	ch := cfg.Chains[name]
	deadline := ch.TotalDeadline(cfg.Policy).String()
	if ch.Deadline == 0 {
		deadline += " (the sum of its endpoints' deadlines)"
	}
	none := func(d time.Duration, what string) string {
		if d == 0 {
			return what
		}
		return d.String()
	}
	values := []policyValue{
		{Key: "deadline", Value: deadline},
		{Key: "hedge", Value: none(ch.Hedge, "none: one endpoint at a time")},
		{Key: "fresh", Value: none(ch.Fresh, "none: every call asks")},
		{Key: "stale", Value: none(ch.Stale, "none: no stored answer stands in")},
	}
	for i := range values {
		values[i].Source = "default"
		if src, ok := cfg.ChainSource(name, values[i].Key); ok {
			values[i].Source, values[i].File, values[i].Line, values[i].ConfigKey = "config", src.File, src.Line, src.Key
		}
	}
	return values
}

// writeExplanation prints e for a person.
func writeExplanation(w io.Writer, e explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	verdict := func(x explanation, indent string) {
		fmt.Fprintf(tw, "%s%s (%s): %s\n", indent, x.Name, x.Kind, sentence(x))
	}
	if e.Kind == "chain" {
		fmt.Fprintf(tw, "%s (chain): tries %s in order; an endpoint that would skip is passed over at once\n", e.Name, strings.Join(names(e.Endpoints), ", "))
		for _, x := range e.Endpoints {
			verdict(x, "  ")
		}
	} else {
		verdict(e, "")
		if e.Action == string(fusebox.ActionSkip) && e.SkipExit != nil {
			fmt.Fprintf(tw, "  a run would exit %d without running its command; a call would try the next endpoint or fail\n", *e.SkipExit)
		}
		if w := e.Watched; w != nil {
			fmt.Fprintf(tw, "  watched over MQTT by fusebox serve: %s, up when %s (config %s:%d)\n", w.Topic, w.Up, w.File, w.Line)
		}
	}
	fmt.Fprintf(tw, "\nstate\t%s\t%s\n", e.State.Value, e.State.Source)
	fmt.Fprintf(tw, "config\t%s\t%s\n", e.Config.Value, e.Config.Source)
	policies := []explanation{e}
	if e.Kind == "chain" {
		policies = append(policies, e.Endpoints...)
	}
	for _, x := range policies {
		fmt.Fprintf(tw, "\npolicy of %s\n", x.Name)
		for _, v := range x.Policy {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Key, v.Value, v.from())
		}
	}
	return tw.Flush()
}

func (v policyValue) from() string {
	from := v.Source
	switch v.Source {
	case "flag":
		from = "flag " + v.Flag
	case "config":
		from = fmt.Sprintf("config %s:%d (%s)", v.File, v.Line, v.ConfigKey)
	}
	if v.Learned != "" {
		from += "; " + v.Learned
	}
	return from
}

// sentence is what x would do, in words: "would skip until ...: why".
func sentence(x explanation) string {
	switch fusebox.Action(x.Action) {
	case fusebox.ActionRun:
		return "would run: " + x.Why
	case fusebox.ActionProbe:
		return "would probe: " + x.Why
	}
	if x.Until != nil {
		return "would skip until " + x.Until.Local().Format(time.TimeOnly) + ": " + x.Why
	}
	return "would skip: " + x.Why
}

func names(xs []explanation) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.Name)
	}
	return out
}
