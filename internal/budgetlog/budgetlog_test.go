package budgetlog_test

import (
	"slices"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/internal/budgetlog"
	"pgregory.net/rapid"
)

func TestBudgetLogWindow(t *testing.T) {
	b := fusebox.RetryBudget{Percent: 0.5, Min: 1, Window: 10 * time.Second}
	t0 := time.Unix(1_000_000, 0)
	var l budgetlog.Log
	for i := range 4 { // a first attempt a second, at t0 .. t0+3s
		l.Spend(b, t0.Add(time.Duration(i)*time.Second), false)
	}
	at := t0.Add(3 * time.Second)
	for i := range budgetlog.Allowed(b, 4) { // 2 + 1
		if got := l.Spend(b, at, true); !got.Allowed {
			t.Fatalf("retry %d of 3 at t0+3s refused: %+v", i+1, got)
		}
	}
	if got := l.Spend(b, at, true); got != (fusebox.BudgetSpend{Firsts: 4, Retries: 3}) {
		t.Fatalf("4th retry at t0+3s: %+v, want refused at 3 retries for 4 first attempts", got)
	}
	// At t0+10s the first attempt at t0 has left the window (it is
	// (now-10s, now]); the retries at t0+3s have not: 3 retries for 3 first
	// attempts, and 3 allowed (1 + 1).
	if got := l.Spend(b, t0.Add(10*time.Second), true); got != (fusebox.BudgetSpend{Firsts: 3, Retries: 3}) {
		t.Fatalf("retry at t0+10s: %+v, want refused with 3 first attempts left in the window", got)
	}
	// At t0+13s everything has left: min alone.
	if got := l.Spend(b, t0.Add(13*time.Second), true); got != (fusebox.BudgetSpend{Allowed: true, Retries: 1}) {
		t.Fatalf("retry at t0+13s: %+v, want allowed by min with an empty window", got)
	}
	if len(l.Firsts) != 0 || len(l.Retries) != 1 {
		t.Fatalf("the log kept %d first attempts and %d retries past the window, want 0 and 1", len(l.Firsts), len(l.Retries))
	}
}

// Whatever the clock did between spends (steps back, jumps ahead, times
// repeated), a log keeps only the times of the window that ends at the
// latest spend: none after it, none a window or more before it. A time
// dated in the future therefore expires one window after the clock comes
// back, instead of holding the budget until the clock catches up.
func TestBudgetLogKeepsOnlyTheWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := fusebox.RetryBudget{Percent: 0.2, Min: 3, Window: 10 * time.Second}
		t0 := time.Unix(1_000_000, 0)
		var l budgetlog.Log
		for i := range rapid.IntRange(1, 60).Draw(t, "spends") {
			offset := time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, "offset"))
			now := t0.Add(offset)
			l.Spend(b, now, rapid.Bool().Draw(t, "retry"))
			lo, hi := now.Add(-b.Window).UnixNano(), now.UnixNano()
			for _, x := range append(slices.Clone(l.Firsts), l.Retries...) {
				if x <= lo || x > hi {
					t.Fatalf("spend %d at t0%+v kept %v, outside the window (t0%+v, t0%+v]", i, offset,
						time.Unix(0, x).Sub(t0), -b.Window+offset, offset)
				}
			}
		}
	})
}

func TestAllowed(t *testing.T) {
	for _, c := range []struct {
		name   string
		b      fusebox.RetryBudget
		firsts int
		want   int
	}{
		{"min alone with no first attempts", fusebox.RetryBudget{Percent: 0.2, Min: 3}, 0, 3},
		{"20% of 40 is 8, not 7 by rounding", fusebox.RetryBudget{Percent: 0.2, Min: 3}, 40, 11},
		{"a share of an attempt is no retry", fusebox.RetryBudget{Percent: 0.2, Min: 0}, 4, 0},
		{"100% allows one retry each", fusebox.RetryBudget{Percent: 1, Min: 0}, 7, 7},
		{"10% of 30 is 3", fusebox.RetryBudget{Percent: 0.1, Min: 1}, 30, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := budgetlog.Allowed(c.b, c.firsts); got != c.want {
				t.Fatalf("Allowed(%d) of %+v = %d, want %d", c.firsts, c.b, got, c.want)
			}
		})
	}
}
