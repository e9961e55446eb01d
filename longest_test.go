package fusebox_test

import (
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
)

func TestLongestIsAttemptsTimesTimeoutWithTheLongestWaits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		r          fusebox.RetryPolicy
		want       time.Duration
		wantCapped bool
	}{
		{"the defaults: 3 × 10s, waits of up to 2s and 4s", fusebox.RetryPolicy{}, 36 * time.Second, false},
		{"two attempts", fusebox.RetryPolicy{Attempts: 2}, 22 * time.Second, false},
		{"one attempt", fusebox.RetryPolicy{Attempts: 1, Timeout: 5 * time.Second}, 5 * time.Second, false},
		{"the deadline first", fusebox.RetryPolicy{Attempts: 5, Deadline: 20 * time.Second}, 20 * time.Second, true},
		{"waits capped at max_delay", fusebox.RetryPolicy{Attempts: 5, Timeout: time.Second, Backoff: fusebox.Backoff{First: time.Second, Max: 3 * time.Second, Jitter: fusebox.JitterEqual}, Deadline: time.Hour},
			5*time.Second + (1+2+3+3)*time.Second, false},
		{"a million attempts, no deadline", fusebox.RetryPolicy{Attempts: 1_000_000, Timeout: time.Second, Backoff: fusebox.Backoff{First: time.Second, Max: time.Second}, Deadline: fusebox.NoDeadline},
			(2*1_000_000 - 1) * time.Second, false},
		{"no timeout, no deadline", fusebox.RetryPolicy{Timeout: fusebox.NoDeadline, Deadline: fusebox.NoDeadline}, fusebox.NoDeadline, true},
	} {
		p := fusebox.Policy{Retry: tc.r}.WithDefaults()
		got, capped := p.Retry.Longest()
		if got != tc.want || capped != tc.wantCapped {
			t.Errorf("%s: Longest() = %s, %v; want %s, %v", tc.name, got, capped, tc.want, tc.wantCapped)
		}
	}
}
