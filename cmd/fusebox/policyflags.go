package main

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/internal/human"
)

// durationValue is a pflag.Value that accepts config.ParseDuration's syntax
// ("90s", "5m", "1d").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}
func (v durationValue) Set(s string) error {
	d, err := human.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}
func (durationValue) Type() string { return "duration" }

// policyFlags are the retry and breaker flags shared by run and call. A flag
// given on the command line overrides the config, which overrides defaults.
type policyFlags struct {
	fs     *pflag.FlagSet
	p      fusebox.Policy
	budget budgetValue // --retry-budget
}

func addPolicyFlags(fs *pflag.FlagSet) *policyFlags {
	pf := &policyFlags{fs: fs}
	r, b := &pf.p.Retry, &pf.p.Breaker
	fs.IntVar(&r.Attempts, "attempts", 0, "attempts in all, the first included (default 3)")
	fs.Var(durationValue{&r.Backoff.First}, "backoff", "first wait between attempts, doubling each time (default 2s)")
	fs.Var(durationValue{&r.Backoff.Max}, "max-delay", "longest single wait (default 30s)")
	fs.Var(jitterValue{&r.Backoff.Jitter}, "jitter", config.JitterNames()+" (default full)")
	fs.Var(durationValue{&r.Timeout}, "timeout", "per attempt; then SIGTERM, and SIGKILL 1s later (default 10s)")
	fs.Var(durationValue{&r.Deadline}, "deadline", "for the whole call, waits included (default 60s)")
	fs.Var(&pf.budget, "retry-budget", "cap the circuit's retries, across every process sharing its state, at this share of its first attempts in 10s plus 3 (like 20%; off for none)")
	fs.IntVar(&b.TripAfter, "trip-after", 0, "consecutive failed attempts that open the circuit (default 3)")
	fs.Var(openForValue{b}, "open-for", "first open period, or auto to learn it from the circuit's outages (default 30s)")
	fs.Var(durationValue{&b.OpenMax}, "open-max", "longest open period after failed probes (default 5m)")
	return pf
}

// apply overrides p with the flags given on the command line.
func (pf *policyFlags) apply(p fusebox.Policy) fusebox.Policy {
	r, b := &p.Retry, &p.Breaker
	set := func(name string, apply func()) {
		if pf.fs.Changed(name) {
			apply()
		}
	}
	set("attempts", func() { r.Attempts = pf.p.Retry.Attempts })
	set("backoff", func() { r.Backoff.First = pf.p.Retry.Backoff.First })
	set("max-delay", func() { r.Backoff.Max = pf.p.Retry.Backoff.Max })
	set("jitter", func() { r.Backoff.Jitter = pf.p.Retry.Backoff.Jitter })
	set("timeout", func() { r.Timeout = pf.p.Retry.Timeout })
	set("deadline", func() { r.Deadline = pf.p.Retry.Deadline })
	set("retry-budget", func() { r.Budget = pf.budget.over(r.Budget) })
	set("trip-after", func() { b.TripAfter = pf.p.Breaker.TripAfter })
	set("open-for", func() { b.OpenFor, b.LearnOpenFor = pf.p.Breaker.OpenFor, pf.p.Breaker.LearnOpenFor })
	set("open-max", func() { b.OpenMax = pf.p.Breaker.OpenMax })
	if pf.fs.Changed("open-for") && !pf.fs.Changed("open-max") && b.OpenMax != 0 && b.OpenMax < b.OpenFor {
		b.OpenMax = b.OpenFor
	}
	return p
}

// validate checks the policy after the flags were applied; a problem is named
// by its flag when a flag set it, else by its config key.
func (pf *policyFlags) validate(p fusebox.Policy) error {
	err := p.Validate()
	if err == nil {
		return nil
	}
	var msgs []string
	for _, e := range unjoin(err) {
		var fe *fusebox.FieldError
		if errors.As(e, &fe) {
			field, _, _ := strings.Cut(fe.Field, ".") // retry_budget.percent is --retry-budget's
			flag := "--" + strings.ReplaceAll(field, "_", "-")
			if pf.fs.Lookup(flag[2:]) != nil && pf.fs.Changed(flag[2:]) {
				msgs = append(msgs, flag+": "+fe.Msg)
				continue
			}
		}
		msgs = append(msgs, e.Error())
	}
	return usageErrorf("%s", strings.Join(msgs, "; "))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// openForValue is --open-for: a duration, or auto (breaker.Policy's
// LearnOpenFor).
type openForValue struct{ b *breaker.Policy }

func (v openForValue) String() string {
	if v.b == nil {
		return ""
	}
	if v.b.LearnOpenFor {
		return "auto"
	}
	return durationValue{&v.b.OpenFor}.String()
}
func (v openForValue) Set(s string) error {
	if s == "auto" {
		v.b.OpenFor, v.b.LearnOpenFor = 0, true
		return nil
	}
	v.b.LearnOpenFor = false
	return durationValue{&v.b.OpenFor}.Set(s)
}
func (openForValue) Type() string { return "duration|auto" }

type jitterValue struct{ j *fusebox.Jitter }

func (v jitterValue) String() string { return string(*v.j) }
func (v jitterValue) Set(s string) error {
	j, err := config.ParseJitter(s)
	if err != nil {
		return err
	}
	*v.j = j
	return nil
}
func (jitterValue) Type() string { return "jitter" }

// budgetValue is --retry-budget: a share ("20%" or 0.2), or off.
type budgetValue struct {
	set     bool
	off     bool
	percent float64
}

func (v *budgetValue) String() string {
	switch {
	case !v.set:
		return ""
	case v.off:
		return "off"
	}
	return strconv.FormatFloat(v.percent*100, 'f', -1, 64) + "%"
}

func (v *budgetValue) Set(s string) error {
	if s == "off" {
		*v = budgetValue{set: true, off: true}
		return nil
	}
	pct, err := config.ParseShare(s)
	if err != nil {
		return err
	}
	*v = budgetValue{set: true, percent: pct}
	return nil
}

func (*budgetValue) Type() string { return "share|off" }

// over is the budget with the flag laid over the config's: its share, and
// the config's min and window, if any.
func (v *budgetValue) over(cfg *fusebox.RetryBudget) *fusebox.RetryBudget {
	if v.off {
		return nil
	}
	b := fusebox.RetryBudget{}
	if cfg != nil {
		b = *cfg
	}
	b.Percent = v.percent
	return &b
}
