package fusebox

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

// Defaults of a RetryBudget's zero fields.
const (
	defaultBudgetMin    = 3
	defaultBudgetWindow = 10 * time.Second
)

// RetryBudget caps a circuit's retries, across every process sharing its
// store, at Percent of its first attempts in the last Window plus Min: when
// an upstream is down, a storm of callers then sends about one request each
// instead of one per attempt. First attempts are never refused. Zero Min and
// Window mean 3 and 10s (Policy.WithDefaults fills them in); a Percent of 0
// with a Min allows Min retries a window and no more.
type RetryBudget struct {
	Percent float64 // share of first attempts, 0.2 for 20% (config: retry_budget or retry_budget.percent)
	Min     int     // retries allowed on top (config: retry_budget.min)
	Window  time.Duration
}

// BudgetSpend is what a BudgetStore decided about one attempt: whether it may
// run, and the circuit's first attempts and retries in the window, this one
// included when it was allowed.
type BudgetSpend struct {
	Allowed bool
	Firsts  int
	Retries int
}

// BudgetStore is a Store that keeps retry budgets (RetryBudget). Do uses it
// only for a circuit whose policy has one: a circuit without a budget costs
// no budget I/O.
type BudgetStore interface {
	// SpendBudget decides, at now, whether an attempt of the circuit may
	// run under b (its defaults filled in, as Do's policy has them: a
	// store reads a zero Min or Window as it is) and records it when it may,
	// in one step across every process (and host) sharing the store: two
	// retries racing for the last allowance never both get it. A first
	// attempt (retry false) is always allowed and recorded; a retry is
	// allowed when the retries in the window (now-b.Window, now], plus
	// this one, are at most floor(b.Percent × the first attempts in it) +
	// b.Min (internal/budgetlog's Allowed). The same errors as Store's
	// methods apply; a caller then lets the attempt run.
	SpendBudget(ctx context.Context, name string, b RetryBudget, now time.Time, retry bool) (BudgetSpend, error)
}

// budgetError is the error of a retry a circuit's RetryBudget refused
// (ExhaustedError.Budget): the budget's counts.
type budgetError struct {
	Firsts, Retries int
	Window          time.Duration
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("retry budget exhausted: %d retr%s for %d first attempt%s in %s",
		e.Retries, pluralY(e.Retries), e.Firsts, plural(e.Firsts), human.Round(e.Window))
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}
