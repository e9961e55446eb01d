package explain

import (
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/file"
)

// StateSource is the state dir or URL, as shown, and what chose it: a
// flag, the environment, the config or the default.
func StateSource(env Env, cfg *config.Config, shown string) Setting {
	configured := ""
	if cfg != nil {
		configured = cfg.State
	}
	_, source := file.ResolveDir(env.StateFlag, configured, env.getenv, env.EUID, env.Home)
	switch source {
	case "config":
		source = "config " + cfg.Path + " (state)"
	case "--state":
		source = "flag --state"
	case "$FUSEBOX_STATE_DIR", "$STATE_DIRECTORY", "$XDG_STATE_HOME", "$HOME":
		source = "env " + source
	}
	return Setting{Value: shown, Source: source}
}

// ConfigSource is the config file and what chose it.
func ConfigSource(env Env) Setting {
	path, explicit := config.Find(env.ConfigFlag, env.getenv, env.Home)
	switch {
	case path == "":
		return Setting{Value: "none", Source: "default (no ~/.config/fusebox/config.yaml or /etc/fusebox/config.yaml)"}
	case env.ConfigFlag != "":
		return Setting{Value: path, Source: "flag --config"}
	case explicit:
		return Setting{Value: path, Source: "env $FUSEBOX_CONFIG"}
	}
	return Setting{Value: path, Source: "default"}
}

// shown says, of each policy key (config.PolicyKeys), the flag that sets
// it (if any) and how to print its value.
var shown = map[string]struct {
	flag  string
	value func(fusebox.Policy) (string, bool) // false: not in effect
}{
	"attempts":   {"attempts", func(p fusebox.Policy) (string, bool) { return strconv.Itoa(p.Retry.Attempts), true }},
	"backoff":    {"backoff", func(p fusebox.Policy) (string, bool) { return p.Retry.Backoff.First.String(), true }},
	"multiplier": {"", func(p fusebox.Policy) (string, bool) { return formatFloat(p.Retry.Backoff.Multiplier), true }},
	"max_delay":  {"max-delay", func(p fusebox.Policy) (string, bool) { return p.Retry.Backoff.Max.String(), true }},
	"jitter":     {"jitter", func(p fusebox.Policy) (string, bool) { return string(p.Retry.Backoff.Jitter), true }},
	"timeout":    {"timeout", func(p fusebox.Policy) (string, bool) { return p.Retry.Timeout.String(), true }},
	"deadline":   {"deadline", func(p fusebox.Policy) (string, bool) { return p.Retry.Deadline.String(), true }},
	"retry_budget.percent": {"retry-budget", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return formatFloat(rb.Percent*100) + "%" })
	}},
	"retry_budget.min": {"", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return strconv.Itoa(rb.Min) })
	}},
	"retry_budget.window": {"", func(p fusebox.Policy) (string, bool) {
		rb := p.Retry.Budget
		return ifBudget(rb, func() string { return rb.Window.String() })
	}},
	"trip_after": {"trip-after", func(p fusebox.Policy) (string, bool) {
		return strconv.Itoa(p.Breaker.TripAfter), p.Breaker.FailureRate == nil
	}},
	"failure_rate.threshold": {"", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return formatFloat(fr.Threshold*100) + "%" })
	}},
	"failure_rate.window": {"", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return strconv.Itoa(fr.Window) })
	}},
	"failure_rate.min_attempts": {"", func(p fusebox.Policy) (string, bool) {
		fr := p.Breaker.FailureRate
		return ifRate(fr, func() string { return strconv.Itoa(fr.MinAttempts) })
	}},
	"open_for":        {"open-for", func(p fusebox.Policy) (string, bool) { return p.Breaker.OpenFor.String(), true }},
	"open_multiplier": {"", func(p fusebox.Policy) (string, bool) { return formatFloat(p.Breaker.OpenMultiplier), true }},
	"open_max":        {"open-max", func(p fusebox.Policy) (string, bool) { return p.Breaker.OpenMax.String(), true }},
	"probes":          {"", func(p fusebox.Policy) (string, bool) { return strconv.Itoa(p.Breaker.Probes), true }},
	"probe_lease":     {"", func(p fusebox.Policy) (string, bool) { return p.Breaker.ProbeLease.String(), true }},
}

func ifRate(fr *breaker.FailureRate, f func() string) (string, bool) {
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

// formatFloat prints a multiplier or a share as short as it can be exact
// (2, 0.5, 12.5).
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// policyValues lists p's values for the circuit name, each with where it
// came from: a flag given, the config, or the default.
func policyValues(cfg *config.Config, name string, p fusebox.Policy, flags Flags) []PolicyValue {
	var out []PolicyValue
	for _, key := range config.PolicyKeys() {
		k, known := shown[key] // each has its entry: a test sees to it
		if !known {
			continue
		}
		v, ok := k.value(p)
		if !ok {
			continue
		}
		pv := PolicyValue{Key: key, Value: v, Source: "default"}
		switch src, inConfig := cfg.PolicySource(name, key); {
		case k.flag != "" && flags.given(k.flag):
			pv.Source, pv.Flag = "flag", "--"+k.flag
		case key == "open_max" && flags.given("open-for") && p.Breaker.OpenMax == p.Breaker.OpenFor:
			pv.Source, pv.Flag = "flag", "--open-for" // raised to it
		case inConfig:
			pv.Source, pv.File, pv.Line, pv.ConfigKey = "config", src.File, src.Line, src.Key
		case key == "probe_lease":
			pv.Source = "default (timeout + 2s)"
		}
		out = append(out, pv)
	}
	return out
}

func skipExitValue(cfg *config.Config, name string, flags Flags, code int) PolicyValue {
	pv := PolicyValue{Key: "skip_exit", Value: strconv.Itoa(code), Source: "default"}
	if flags.given("skip-exit") {
		pv.Source, pv.Flag = "flag", "--skip-exit"
	} else if src, ok := cfg.PolicySource(name, "skip_exit"); ok {
		pv.Source, pv.File, pv.Line, pv.ConfigKey = "config", src.File, src.Line, src.Key
	}
	return pv
}

// chainValues are a chain's own deadline, hedge, fresh and stale, and
// where each came from.
func chainValues(cfg *config.Config, name string) []PolicyValue {
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
	values := []PolicyValue{
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
