// Package budgetlog is the arithmetic of a retry budget (fusebox.RetryBudget)
// for the stores that keep its attempts as a list of times, file and mem:
// what fusebox.BudgetStore.SpendBudget decides. Redis decides the same in
// Lua (redis/budget.go).
package budgetlog

import (
	"math"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// Log is the attempts of one circuit's retry budget, oldest first, as Unix
// nanoseconds: the record a store keeps for fusebox.BudgetStore's
// SpendBudget and decides on with Spend. It holds at most the attempts of
// one window.
type Log struct {
	Firsts  []int64
	Retries []int64
}

// Spend decides an attempt at now under b (defaults filled in) as
// fusebox.BudgetStore.SpendBudget describes, dropping attempts that left the window
// and appending this one when it is allowed. An attempt dated after now (a
// clock that was ahead, then stepped back) counts as made now, so that it
// leaves the window one Window later instead of holding the budget until
// the clock catches up with it.
func (l *Log) Spend(b fusebox.RetryBudget, now time.Time, retry bool) fusebox.BudgetSpend {
	t := now.UnixNano()
	since := t - int64(b.Window)
	l.Firsts = inWindow(l.Firsts, since, t)
	l.Retries = inWindow(l.Retries, since, t)
	switch {
	case !retry:
		l.Firsts = append(l.Firsts, t)
	case len(l.Retries)+1 <= Allowed(b, len(l.Firsts)):
		l.Retries = append(l.Retries, t)
	default:
		return fusebox.BudgetSpend{Firsts: len(l.Firsts), Retries: len(l.Retries)}
	}
	return fusebox.BudgetSpend{Allowed: true, Firsts: len(l.Firsts), Retries: len(l.Retries)}
}

// Allowed is how many retries b allows for firsts first attempts in a
// window: floor(Percent*firsts) + Min. The floor is taken after a tiny
// allowance, so that 20% of 40 is 8 and not 7 for 0.2*40 = 7.999….
func Allowed(b fusebox.RetryBudget, firsts int) int {
	return int(math.Floor(b.Percent*float64(firsts)+1e-9)) + b.Min
}

// inWindow keeps the times of ts in the window (since, now], in place and
// in their order, a time after now clamped to now. Every time is looked at,
// not only the leading ones: a log written under a stepped clock need not
// be sorted.
func inWindow(ts []int64, since, now int64) []int64 {
	kept := ts[:0]
	for _, x := range ts {
		if x = min(x, now); x > since {
			kept = append(kept, x)
		}
	}
	return kept
}
