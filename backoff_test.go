package fusebox_test

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fusebox-hq/fusebox"
)

// almostOne is the largest draw below 1: the top of every jitter range.
var almostOne = math.Nextafter(1, 0)

// TestBackoffExp: without jitter, Delay is the exponential schedule.
func TestBackoffExp(t *testing.T) {
	doubling := fusebox.Backoff{First: time.Second, Multiplier: 2, Max: 30 * time.Second, Jitter: fusebox.JitterNone}
	tests := []struct {
		name    string
		b       fusebox.Backoff
		attempt int
		want    time.Duration
	}{
		{"the first wait is First", doubling, 1, time.Second},
		{"each attempt multiplies the wait", doubling, 2, 2 * time.Second},
		{"the fifth wait is First×2⁴", doubling, 5, 16 * time.Second},
		{"a wait past Max is capped", doubling, 6, 30 * time.Second},
		{"attempt 1e9 is capped, not overflowed", doubling, 1e9, 30 * time.Second},
		{"attempt 0 counts as the first", doubling, 0, time.Second},
		{"a negative attempt counts as the first", doubling, -7, time.Second},
		{"multiplier 1 keeps the wait constant", fusebox.Backoff{First: time.Second, Multiplier: 1, Max: time.Minute, Jitter: fusebox.JitterNone}, 1e9, time.Second},
		{"a cap of NoDeadline does not overflow", fusebox.Backoff{First: time.Second, Multiplier: 2, Max: fusebox.NoDeadline, Jitter: fusebox.JitterNone}, 1e9, fusebox.NoDeadline},
		{"a First above Max is capped", fusebox.Backoff{First: time.Minute, Multiplier: 2, Max: 30 * time.Second, Jitter: fusebox.JitterNone}, 1, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.attempt, 0, 0.5); got != tt.want {
				t.Errorf("Delay(%d) = %s, want %s", tt.attempt, got, tt.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	// Attempt 3 of a 1s doubling schedule: the un-jittered wait is 4s.
	b := func(j fusebox.Jitter, max time.Duration) fusebox.Backoff {
		return fusebox.Backoff{First: time.Second, Multiplier: 2, Max: max, Jitter: j}
	}
	const s = time.Second
	tests := []struct {
		name    string
		b       fusebox.Backoff
		attempt int
		prev    time.Duration
		draw    float64
		want    time.Duration
	}{
		{"full jitter: draw 0 waits nothing", b(fusebox.JitterFull, 30*s), 3, 0, 0, 0},
		{"full jitter: draw 0.5 waits half", b(fusebox.JitterFull, 30*s), 3, 0, 0.5, 2 * s},
		{"full jitter: the top draw stays below exp", b(fusebox.JitterFull, 30*s), 3, 0, almostOne, 4*s - 1},
		{"zero jitter means full", b("", 30*s), 3, 0, 0.5, 2 * s},
		{"equal jitter: draw 0 waits exp/2", b(fusebox.JitterEqual, 30*s), 3, 0, 0, 2 * s},
		{"equal jitter: draw 0.5 waits 3/4 exp", b(fusebox.JitterEqual, 30*s), 3, 0, 0.5, 3 * s},
		{"equal jitter: the top draw stays below exp", b(fusebox.JitterEqual, 30*s), 3, 0, almostOne, 4*s - 1},
		{"decorrelated: draw 0 waits First", b(fusebox.JitterDecorrelated, 30*s), 3, 3 * s, 0, s},
		{"decorrelated: draw 0.5 is midway to 3×prev", b(fusebox.JitterDecorrelated, 30*s), 3, 3 * s, 0.5, 5 * s},
		{"decorrelated: the top draw stays below 3×prev", b(fusebox.JitterDecorrelated, 30*s), 3, 3 * s, almostOne, 9*s - 1},
		{"decorrelated: no previous wait counts as First", b(fusebox.JitterDecorrelated, 30*s), 1, 0, 0.5, 2 * s},
		{"decorrelated: the top draw stays below Max", b(fusebox.JitterDecorrelated, 30*s), 3, 20 * s, almostOne, 30*s - 1},
		{"decorrelated: a previous wait above Max stays below Max", b(fusebox.JitterDecorrelated, 30*s), 3, time.Hour, almostOne, 30*s - 1},
		{"decorrelated: 3×prev just under a Max not divisible by 3 bounds the wait", b(fusebox.JitterDecorrelated, 10*s), 3, 10 * s / 3, almostOne, 10*s/3*3 - 1},
		{"decorrelated: First above Max waits Max", fusebox.Backoff{First: time.Minute, Multiplier: 2, Max: 30 * s, Jitter: fusebox.JitterDecorrelated}, 3, 0, 0.5, 30 * s},
		{"no jitter waits exp whatever the draw", b(fusebox.JitterNone, 30*s), 3, 0, almostOne, 4 * s},
		{"no jitter is capped at Max", b(fusebox.JitterNone, 30*s), 10, 0, 0, 30 * s},
		{"a draw below 0 counts as 0", b(fusebox.JitterFull, 30*s), 3, 0, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.attempt, tt.prev, tt.draw); got != tt.want {
				t.Errorf("Delay(%d, %s, %v) = %s, want %s", tt.attempt, tt.prev, tt.draw, got, tt.want)
			}
		})
	}
}

// TestBackoffDelayStaysInItsRange checks every jitter's range for any
// schedule, attempt, previous wait and draw in [0, 1).
func TestBackoffDelayStaysInItsRange(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := fusebox.Backoff{
			First:      time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "first")),
			Multiplier: rapid.Float64Range(1, 10).Draw(t, "multiplier"),
			Max:        time.Duration(rapid.Int64Range(1, int64(24*time.Hour)).Draw(t, "max")),
			Jitter:     rapid.SampledFrom([]fusebox.Jitter{fusebox.JitterFull, fusebox.JitterEqual, fusebox.JitterDecorrelated, fusebox.JitterNone}).Draw(t, "jitter"),
		}
		attempt := rapid.IntRange(1, 1e9).Draw(t, "attempt")
		prev := time.Duration(rapid.Int64Range(0, int64(48*time.Hour)).Draw(t, "prev"))
		draw := min(rapid.Float64Range(0, 1).Draw(t, "draw"), almostOne)

		got := b.Delay(attempt, prev, draw)
		none := b
		none.Jitter = fusebox.JitterNone
		exp := none.Delay(attempt, prev, draw)
		if exp < 0 || exp > b.Max {
			t.Fatalf("Delay(%d) without jitter = %s, outside [0, %s]", attempt, exp, b.Max)
		}
		lo, hi := time.Duration(0), exp // [lo, hi), or exactly lo when hi <= lo
		switch b.Jitter {
		case fusebox.JitterEqual:
			lo = exp / 2
		case fusebox.JitterDecorrelated:
			lo = min(b.First, b.Max)
			hi = b.Max
			if p := max(prev, b.First); p <= b.Max/3 {
				hi = 3 * p
			}
		case fusebox.JitterNone:
			lo, hi = exp, exp
		}
		if hi <= lo {
			if got != lo {
				t.Fatalf("Delay = %s, want exactly %s", got, lo)
			}
			return
		}
		if got < lo || got >= hi {
			t.Fatalf("Delay = %s, outside [%s, %s)", got, lo, hi)
		}
	})
}
