// Package explain says what a run or call of a name would do now, and why,
// and where each value of its policy comes from: a flag, a line of the
// config file, or the built-in default. It is fusebox explain's library:
// Build reads the config and the state store, changing nothing, and
// WriteText and WriteJSON print what it found.
package explain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
)

// Request is what Build explains: the circuit, endpoint or chain Name, as
// a run or call given Flags would see it at Now.
type Request struct {
	Name   string
	Config *config.Config // nil: no config file
	// Store is read through ReadOnly: Build repairs nothing.
	Store fusebox.Admin
	Now   breaker.Instant
	Flags Flags
	Env   Env
	// StateShown is the state dir or URL as the command prints it, a
	// URL's password hidden.
	StateShown string
	// ServeBudget is the time fusebox serve gives a call of a caller that
	// sends no wait of its own; 0: say nothing of the daemon.
	ServeBudget time.Duration
}

// Flags are the run or call flags explain was given.
type Flags struct {
	// Policy lays the policy flags over a circuit's policy from the
	// config and checks the result; its error is returned as it is. nil:
	// no flags.
	Policy func(fusebox.Policy) (fusebox.Policy, error)
	// Given reports whether a flag, named without its dashes
	// ("open-for"), was given. nil: none was.
	Given func(flag string) bool
	// SkipExit is --skip-exit: given, or its default.
	SkipExit int
}

func (f Flags) given(flag string) bool { return f.Given != nil && f.Given(flag) }

// Env is what chose the state dir and the config file: the global flags,
// the environment and the user (as file.ResolveDir and config.Find take
// them).
type Env struct {
	StateFlag, ConfigFlag string
	Getenv                func(string) string // nil: an empty environment
	EUID                  int
	Home                  string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Explanation is Build's answer; its JSON is fusebox explain --json.
type Explanation struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"` // circuit, endpoint or chain
	Action   string        `json:"action,omitempty"`
	Phase    string        `json:"phase,omitempty"`
	Until    *time.Time    `json:"until,omitempty"`
	Why      string        `json:"why,omitempty"`
	SkipExit *int          `json:"skip_exit,omitempty"` // what a skipped run exits with (circuits only)
	State    Setting       `json:"state"`
	Config   Setting       `json:"config"`
	Policy   []PolicyValue `json:"policy,omitempty"`
	// Longest is the longest a run or call of the name can take.
	Longest *Longest `json:"longest,omitempty"`
	// Endpoints are a chain's, in the order it tries them.
	Endpoints []Explanation `json:"endpoints,omitempty"`
	// Watched says the daemon opens and closes the circuit from an MQTT
	// topic (health: mqtt:).
	Watched *Watched `json:"watched,omitempty"`
}

// Watched is a circuit's health: mqtt: watch, and where the config sets
// it.
type Watched struct {
	Topic string `json:"topic"`
	Up    string `json:"up"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

// Setting is the state dir or the config file, and what chose it.
type Setting struct {
	Value  string `json:"value"`
	Source string `json:"source"`
}

// PolicyValue is one effective value of a policy, and where it came from:
// "flag" (Flag), "config" (File, Line, ConfigKey) or "default".
type PolicyValue struct {
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

// Build explains r.Name. It takes no probe and writes no state: a damaged
// state file is reported, with what a run would do about it.
func Build(ctx context.Context, r Request) (Explanation, error) {
	cfg, store := r.Config, ReadOnly(r.Store)
	e := Explanation{Name: r.Name, Kind: "circuit", State: StateSource(r.Env, cfg, r.StateShown), Config: ConfigSource(r.Env)}
	var endpoints []string
	switch {
	case cfg != nil && cfg.Chains[r.Name] != nil:
		e.Kind, endpoints = "chain", cfg.Chains[r.Name].Endpoints
	case cfg != nil && cfg.Circuits[r.Name] != nil && cfg.Circuits[r.Name].Endpoint != nil:
		e.Kind = "endpoint"
	}
	if e.Kind == "chain" {
		e.Policy = chainValues(cfg, r.Name)
		policy := func(n string) fusebox.Policy {
			p := cfg.Policy(n)
			if r.Flags.Policy != nil {
				if q, err := r.Flags.Policy(p); err == nil {
					p = q
				}
			}
			return p
		}
		ch := cfg.Chains[r.Name]
		l := longestChain(ch, policy)
		l.served(ch.Longest(policy), r.ServeBudget)
		e.Longest = &l
		for _, n := range endpoints {
			x := Explanation{Name: n, Kind: "endpoint"}
			if err := explainCircuit(ctx, &x, r, store); err != nil {
				return Explanation{}, err
			}
			e.Endpoints = append(e.Endpoints, x)
		}
		return e, nil
	}
	if err := explainCircuit(ctx, &e, r, store); err != nil {
		return Explanation{}, err
	}
	code := r.Flags.SkipExit
	if c, ok := cfg.SkipExit(r.Name); ok && !r.Flags.given("skip-exit") {
		code = c
	}
	e.SkipExit = &code
	e.Policy = append(e.Policy, skipExitValue(cfg, r.Name, r.Flags, code))
	if w := cfg.Watch(r.Name); w != nil {
		src, _ := cfg.PolicySource(r.Name, "health.mqtt.up")
		e.Watched = &Watched{Topic: w.Topic, Up: w.Up.String(), File: src.File, Line: src.Line}
	}
	return e, nil
}

// explainCircuit fills in x, the circuit x.Name: what a run would do, and
// its policy.
func explainCircuit(ctx context.Context, x *Explanation, r Request, store fusebox.Admin) error {
	p := r.Config.Policy(x.Name)
	if r.Flags.Policy != nil {
		var err error
		if p, err = r.Flags.Policy(p); err != nil {
			return err
		}
	}
	p = p.WithDefaults()
	st, err := store.Load(ctx, x.Name)
	damaged := errors.Is(err, fusebox.ErrDamaged)
	if err != nil && !damaged {
		return fmt.Errorf("read the state of %s: %w", x.Name, err)
	}
	v := judge(st, p.Breaker, r.Now)
	x.Action, x.Phase, x.Why = v.action, string(v.phase), v.why
	if damaged {
		x.Why = err.Error() + ": a run moves it aside and starts afresh; " + v.why
	}
	if !v.until.IsZero() {
		x.Until = &v.until
	}
	x.Policy = policyValues(r.Config, x.Name, p, r.Flags)
	l := longestCall(p, x.Kind == "endpoint")
	if x.Kind == "endpoint" && x.Name == r.Name { // a chain's endpoint has the chain's
		ep := httpcall.Endpoint{Policy: p}
		l.served(ep.Longest(), r.ServeBudget)
	}
	x.Longest = &l
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

// ReadOnly is s as explain reads it: its Load, Counts and Names are the
// store's Peek and PeekNames, so that nothing changes and a damaged record
// is reported instead of moved aside.
func ReadOnly(s fusebox.Admin) fusebox.Admin {
	if _, ok := s.(readOnly); ok {
		return s
	}
	return readOnly{s}
}

type readOnly struct{ fusebox.Admin }

func (r readOnly) Load(ctx context.Context, name string) (breaker.State, error) {
	st, _, err := r.Admin.Peek(ctx, name)
	return st, err
}

func (r readOnly) Counts(ctx context.Context, name string) (fusebox.Counts, error) {
	_, c, err := r.Admin.Peek(ctx, name)
	return c, err
}

func (r readOnly) Names(ctx context.Context) ([]string, error) {
	return r.Admin.PeekNames(ctx)
}
