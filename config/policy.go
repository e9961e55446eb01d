package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// keyRefs maps the policy keys set in one place (defaults: or a circuit),
// "failure_rate.window" and the like included, to where they were set.
type keyRefs map[string]entry

// attempts reads attempts:, at least 1: the Policy's zero means the
// default, so 0 is refused with what to write instead.
func (l *loader) attempts(e entry) (int, bool) {
	n, ok := l.integer(e.value, e.path)
	if ok && n == 0 {
		l.errorAt(e, e.path, "must be at least 1, got 0 (leave attempts out for the default, %d)", fusebox.Policy{}.WithDefaults().Retry.Attempts)
		return 0, false
	}
	return n, ok
}

// openFor reads open_for: a duration, or auto (learned; the default is its
// first guess). A duration set over an auto of defaults: turns it off.
func (l *loader) openFor(e entry, b *breaker.Policy) {
	if s, ok := l.text(e.value, e.path, "a duration like 30s, or auto"); ok && strings.TrimSpace(s) == "auto" {
		b.OpenFor, b.LearnOpenFor = 0, true
		return
	}
	if d, ok := l.duration(e.value, e.path); ok {
		b.OpenFor, b.LearnOpenFor = d, false
	}
}

// set returns a function that stores a value read from the config in field
// when it was read without a problem.
func set[T any](field *T) func(T, bool) {
	return func(v T, ok bool) {
		if ok {
			*field = v
		}
	}
}

func (l *loader) jitter(e entry) (fusebox.Jitter, bool) {
	s, ok := l.text(e.value, e.path, JitterNames())
	if !ok {
		return "", false
	}
	j, err := ParseJitter(s)
	if err != nil {
		l.errorf(e.value, e.path, "%v", err)
		return "", false
	}
	return j, true
}

// failureRate reads failure_rate as a unit: null means none (to turn off a
// failure rate set in defaults:).
func (l *loader) failureRate(e entry, b *block, refs keyRefs) *breaker.FailureRate {
	if isNull(l.resolve(e.value, e.path)) {
		return nil
	}
	fr := &breaker.FailureRate{}
	if _, ok := l.read(e, b, fr, refs, "failure_rate."); !ok {
		return nil
	}
	return fr
}

// retryBudget reads retry_budget as a unit: a share ("20%", 0.2), or a
// mapping of percent, min and window; null means none (to turn off a budget
// set in defaults:).
func (l *loader) retryBudget(e entry, b *block, refs keyRefs) *fusebox.RetryBudget {
	v := l.resolve(e.value, e.path)
	if isNull(v) {
		return nil
	}
	rb := &fusebox.RetryBudget{}
	if _, ok := v.(*ast.MappingNode); !ok {
		pct, ok := l.threshold(e)
		if !ok {
			return nil
		}
		rb.Percent = pct
		refs["retry_budget.percent"] = e // its problems are the key's own
		return rb
	}
	given, ok := l.read(e, b, rb, refs, "retry_budget.")
	if !ok {
		return nil
	}
	if _, hasPercent := lookup(given, "percent"); !hasPercent {
		l.errorAt(e, e.path, "needs percent, the share of first attempts that may be retried (like percent: 20%%)")
	}
	return rb
}

// defaultBudget is a retry budget's defaults: what a budget that sets only
// its percent gets.
func defaultBudget() fusebox.RetryBudget {
	return *fusebox.Policy{Retry: fusebox.RetryPolicy{Budget: &fusebox.RetryBudget{}}}.WithDefaults().Retry.Budget
}

// budgetMin reads retry_budget's min: at least 1, as 0 means the default.
func (l *loader) budgetMin(f entry) (int, bool) {
	n, ok := l.integer(f.value, f.path)
	if ok && n == 0 {
		l.errorAt(f, f.path, "must be at least 1, got 0 (leave min out for the default, %d; percent alone then bounds the retries)", defaultBudget().Min)
		return 0, false
	}
	return n, ok
}

// budgetWindow reads retry_budget's window: above 0, as 0 means the
// default.
func (l *loader) budgetWindow(f entry) (time.Duration, bool) {
	d, ok := l.duration(f.value, f.path)
	if ok && d == 0 {
		l.errorAt(f, f.path, "must be above 0 (leave window out for the default, %s)", defaultBudget().Window)
		return 0, false
	}
	return d, ok
}

// threshold reads a share as a fraction (0.5) or a percentage ("50%").
func (l *loader) threshold(e entry) (float64, bool) {
	if s, ok := l.resolve(e.value, e.path).(*ast.StringNode); ok && strings.HasSuffix(s.Value, "%") {
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s.Value, "%")), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			l.errorf(s, e.path, "want a share like 50%% or 0.5, got %q", s.Value)
			return 0, false
		}
		return v / 100, true
	}
	v, ok := l.number(e.value, e.path)
	if ok && v > 1 && v <= 100 {
		l.errorf(e.value, e.path, "want a share like 50%% or 0.5, got %g (write %g%% for a percentage)", v, v)
		return 0, false
	}
	return v, ok
}

// validate reports the impossible values of p at the keys that set them,
// unless a problem reading that key was reported already. A problem with a
// key that refs lacks was inherited: it is reported at inheritor (the
// circuit) unless it is in skip, the problems already reported for
// defaults:. It returns the problems it found, reported or not.
func (l *loader) validate(p fusebox.Policy, refs keyRefs, inheritor *entry, skip map[fusebox.FieldError]bool) map[fusebox.FieldError]bool {
	found := map[fusebox.FieldError]bool{}
	for _, err := range unjoin(p.Validate()) {
		var fe *fusebox.FieldError
		if !errors.As(err, &fe) {
			continue
		}
		found[*fe] = true
		e, own := refs[fe.Field]
		path := e.path
		if parent, sub, nested := strings.Cut(fe.Field, "."); !own && nested {
			e, own = refs[parent] // failure_rate.window when window was left out
			path = join(e.path, sub)
		}
		switch {
		case own && l.probs.hasKey(path):
		case own:
			l.errorAt(e, path, "%s", fe.Msg)
		case skip[*fe] || inheritor == nil:
		default:
			l.errorAt(*inheritor, join(inheritor.path, fe.Field), "%s (%s is inherited from defaults)", fe.Msg, fe.Field)
		}
	}
	return found
}

// unjoin returns the errors joined in err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}
