package fusebox

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The wait between attempts is Do's own (RetryPolicy.wait); these tests
// pin it down directly.

func TestRetryPolicyWait(t *testing.T) {
	p := RetryPolicy{
		Attempts: 3,
		Backoff:  Backoff{First: time.Second, Multiplier: 2, Max: 30 * time.Second, Jitter: JitterNone},
	}
	tests := []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		remaining  time.Duration
		want       time.Duration
		wantOK     bool
	}{
		{"waits the backoff after a failed attempt", 1, 0, NoDeadline, time.Second, true},
		{"the backoff grows with the attempt", 2, 0, NoDeadline, 2 * time.Second, true},
		{"no wait after the last attempt", 3, 0, NoDeadline, 0, false},
		{"no wait past the last attempt", 4, 0, NoDeadline, 0, false},
		{"Retry-After replaces a shorter backoff", 1, 7 * time.Second, NoDeadline, 7 * time.Second, true},
		{"Retry-After replaces a longer backoff", 2, 100 * time.Millisecond, NoDeadline, 100 * time.Millisecond, true},
		{"a wait that would reach the deadline is refused", 1, 0, time.Second, 0, false},
		{"a wait just short of the deadline is taken", 1, 0, time.Second + 1, time.Second, true},
		{"Retry-After past the deadline gives up at once", 1, 2 * time.Minute, time.Minute, 0, false},
		{"Retry-After reaching the deadline gives up at once", 1, time.Minute, time.Minute, 0, false},
		{"a deadline already reached allows no wait", 1, 0, 0, 0, false},
		{"a deadline already passed allows no wait", 1, 0, -time.Second, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := p.wait(tt.attempt, 0, 0.5, tt.retryAfter, tt.remaining)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Wait(%d, retryAfter %s, remaining %s) = %s, %v; want %s, %v",
					tt.attempt, tt.retryAfter, tt.remaining, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestRetryPolicyWaitNeverOutlastsTheDeadline: whatever the schedule and the
// server asks, a wait that is taken ends before the deadline.
func TestRetryPolicyWaitNeverOutlastsTheDeadline(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Policy{Retry: RetryPolicy{
			Attempts: rapid.IntRange(1, 20).Draw(t, "attempts"),
			Backoff: Backoff{
				First:  time.Duration(rapid.Int64Range(1, int64(time.Minute)).Draw(t, "first")),
				Jitter: rapid.SampledFrom([]Jitter{JitterFull, JitterEqual, JitterDecorrelated, JitterNone}).Draw(t, "jitter"),
			},
		}}.WithDefaults().Retry
		attempt := rapid.IntRange(1, 25).Draw(t, "attempt")
		retryAfter := time.Duration(rapid.Int64Range(0, int64(10*time.Minute)).Draw(t, "retry_after"))
		remaining := time.Duration(rapid.Int64Range(-int64(time.Second), int64(10*time.Minute)).Draw(t, "remaining"))
		draw := min(rapid.Float64Range(0, 1).Draw(t, "draw"), math.Nextafter(1, 0)) // below 1

		d, ok := p.wait(attempt, 0, draw, retryAfter, remaining)
		if !ok {
			if d != 0 {
				t.Fatalf("refused wait is %s, want 0", d)
			}
			return
		}
		if attempt >= p.Attempts {
			t.Fatalf("waits after attempt %d of %d", attempt, p.Attempts)
		}
		if d >= remaining {
			t.Fatalf("wait %s reaches the deadline %s away", d, remaining)
		}
		if retryAfter > 0 && d != retryAfter {
			t.Fatalf("wait %s ignores Retry-After %s", d, retryAfter)
		}
	})
}
