package fusebox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestBudgetValidate(t *testing.T) {
	p := fusebox.Policy{Retry: fusebox.RetryPolicy{Budget: &fusebox.RetryBudget{Percent: -0.1, Min: -1, Window: -time.Second}}}
	err := p.Validate()
	for _, field := range []string{"retry_budget.percent", "retry_budget.min", "retry_budget.window"} {
		found := false
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var fe *fusebox.FieldError
			found = found || errors.As(e, &fe) && fe.Field == field
		}
		if !found {
			t.Errorf("Validate of a negative budget: no error for %s in %v", field, err)
		}
	}
	d := fusebox.Policy{Retry: fusebox.RetryPolicy{Budget: &fusebox.RetryBudget{Percent: 0.2}}}.WithDefaults()
	if got := *d.Retry.Budget; got != (fusebox.RetryBudget{Percent: 0.2, Min: 3, Window: 10 * time.Second}) {
		t.Fatalf("WithDefaults of a 20%% budget: %+v, want min 3 and window 10s", got)
	}
}

// The storm the budget is for: 40 callers whose every attempt fails, five
// attempts each, at the same moment. Without a budget each sends all five;
// with 20% (min 3) the retries all callers send together are at most 20% of
// the 40 first attempts plus 3, and every caller refused says so, with the
// counts, without counting the refusal as a failure of the circuit.
func TestDoRetryBudgetBoundsAStorm(t *testing.T) {
	const callers, attempts = 40, 5
	policy := func(b *fusebox.RetryBudget) fusebox.Policy {
		p := doPolicy()
		p.Retry.Attempts = attempts
		p.Retry.Budget = b
		p.Breaker.TripAfter = 1000 // the breaker stays out of it
		return p.WithDefaults()
	}
	storm := func(t *testing.T, p fusebox.Policy) (sent int, errs []error, store *mem.Store) {
		store = mem.New()
		c := fusebox.New(store, fusebox.WithPolicy(p))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				err := c.Do(context.Background(), "api", func(context.Context) error {
					mu.Lock()
					sent++
					mu.Unlock()
					return errors.New("status 503")
				})
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
		}
		wg.Wait()
		return sent, errs, store
	}
	synctest.Test(t, func(t *testing.T) {
		if sent, _, _ := storm(t, policy(nil)); sent != callers*attempts {
			t.Fatalf("without a budget: %d attempts, want %d", sent, callers*attempts)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		b := &fusebox.RetryBudget{Percent: 0.2}
		p := policy(b)
		sent, errs, store := storm(t, p)
		want := callers + callers/5 + 3 // 40 first attempts + 20% of them + Min
		if sent != want {
			t.Fatalf("with a 20%% budget: %d attempts, want %d first attempts plus %d retries", sent, callers, want-callers)
		}
		refused := 0
		for _, err := range errs {
			var ee *fusebox.ExhaustedError
			if !errors.As(err, &ee) {
				t.Fatalf("a caller ended with %v, want an *ExhaustedError", err)
			}
			if ee.Budget != nil { // the budget, not the attempts, ended it
				refused++
				msg := fmt.Sprintf("retry budget exhausted: %d retries for %d first attempts in 10s", want-callers, callers)
				if got := ee.Budget.Error(); got != msg {
					t.Fatalf("a refusal says %q, want %q", got, msg)
				}
			}
		}
		if refused == 0 {
			t.Fatal("no caller was refused by the budget")
		}
		counts, _ := store.Counts(context.Background(), "api")
		if counts.Failures != uint64(sent) {
			t.Fatalf("the circuit counted %d failures for %d attempts sent: a refused retry must count none", counts.Failures, sent)
		}
	})
}

func TestDoRetryBudgetMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := doPolicy()
		p.Retry.Budget = &fusebox.RetryBudget{Percent: 0, Min: 1} // one retry a window, and no more
		c := fusebox.New(mem.New(), fusebox.WithPolicy(p))
		err := c.Do(context.Background(), "api", func(context.Context) error { return errors.New("status 503") })
		const want = "api: retry budget exhausted: 1 retry for 1 first attempt in 10s after 2 attempts: status 503"
		if err == nil || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})
}

// spendCounter is a mem store that counts SpendBudget calls.
type spendCounter struct {
	*mem.Store
	mu    sync.Mutex
	calls int
}

func (s *spendCounter) SpendBudget(ctx context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (fusebox.BudgetSpend, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.Store.SpendBudget(ctx, name, b, now, retry)
}

func TestDoWithoutRetryBudgetSpendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &spendCounter{Store: mem.New()}
		c := fusebox.New(s, fusebox.WithPolicy(doPolicy()))
		c.Do(context.Background(), "api", func(context.Context) error { return errors.New("status 503") })
		c.Do(context.Background(), "api", func(context.Context) error { return nil })
		if s.calls != 0 {
			t.Fatalf("a circuit without retry_budget asked its store's budget %d times, want never", s.calls)
		}
		p := doPolicy()
		p.Retry.Budget = &fusebox.RetryBudget{Percent: 1}
		c = fusebox.New(s, fusebox.WithPolicy(p))
		c.Do(context.Background(), "budgeted", func(context.Context) error { return errors.New("status 503") })
		if s.calls != 3 {
			t.Fatalf("a call of 3 attempts under a budget asked it %d times, want 3 (1 first attempt, 2 retries)", s.calls)
		}
	})
}

// A budget of one retry a window (min 1, percent 0): a call whose waits are
// shorter than the window gets that one retry; one whose waits outlast it
// gets one retry in every window it waits into.
func TestDoRetryBudgetWindowPassesDuringWaits(t *testing.T) {
	for _, c := range []struct {
		name     string
		backoff  time.Duration
		attempts int
	}{
		{"waits of 1s and 2s fit in one 10s window: one retry", time.Second, 2},
		{"waits of 20s and 40s each leave the window: every retry", 20 * time.Second, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := doPolicy()
				p.Retry.Backoff = fusebox.Backoff{First: c.backoff, Multiplier: 2, Max: time.Minute, Jitter: fusebox.JitterNone}
				p.Retry.Deadline = 5 * time.Minute
				p.Breaker.TripAfter = 100
				p.Retry.Budget = &fusebox.RetryBudget{Percent: 0, Min: 1, Window: 10 * time.Second}
				circuits := fusebox.New(mem.New(), fusebox.WithPolicy(p))
				ran := 0
				err := circuits.Do(context.Background(), "api", func(context.Context) error { ran++; return errors.New("status 503") })
				if ran != c.attempts {
					t.Fatalf("%d attempts ran, want %d (err %v)", ran, c.attempts, err)
				}
			})
		})
	}
}
