package fusebox

import (
	"math"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// Exp returns the un-jittered delay after the given failed attempt (1-based):
// First * Multiplier^(attempt-1), capped at Max. It does not overflow for any
// attempt count.
func (b Backoff) Exp(attempt int) time.Duration {
	return breaker.Exp(b.First, b.Multiplier, b.Max, attempt)
}

// Delay returns the wait after the given failed attempt (1-based). draw is a
// uniform random number in [0, 1) and prev the previous wait (used by
// decorrelated jitter; 0 before the first wait), so the result is a pure
// function of its arguments and tests can be exact. b must have its defaults
// set (Policy.WithDefaults).
func (b Backoff) Delay(attempt int, prev time.Duration, draw float64) time.Duration {
	draw = min(max(draw, 0), 1)
	switch b.Jitter {
	case JitterNone:
		return b.Exp(attempt)
	case JitterEqual:
		exp := b.Exp(attempt)
		return exp/2 + scale(exp-exp/2, draw)
	case JitterDecorrelated:
		// sleep = min(cap, random_between(base, sleep*3))
		prev = max(prev, b.First)
		hi := b.Max
		if prev <= b.Max/3 { // 3*prev <= Max, without overflow
			hi = prev * 3
		}
		if hi <= b.First {
			return min(b.First, b.Max)
		}
		return min(b.First+scale(hi-b.First, draw), b.Max)
	default: // JitterFull
		return scale(b.Exp(attempt), draw)
	}
}

func scale(d time.Duration, draw float64) time.Duration {
	return time.Duration(float64(d) * draw)
}

// NoDeadline is the remaining time of a call without a deadline.
const NoDeadline = time.Duration(math.MaxInt64)

// Wait decides whether the call retries after the given failed attempt and how
// long it waits first. retryAfter, when positive, is the server's Retry-After
// and replaces the computed delay. remaining is the time left before the
// call's deadline (NoDeadline when it has none): a wait that would reach the
// deadline is not taken, so no wait ever outlasts the deadline, and a
// Retry-After longer than what remains gives up at once, letting a fallback
// answer instead.
func (p RetryPolicy) Wait(attempt int, prev time.Duration, draw float64, retryAfter, remaining time.Duration) (time.Duration, bool) {
	if attempt >= p.Attempts || remaining <= 0 {
		return 0, false
	}
	d := p.Backoff.Delay(attempt, prev, draw)
	if retryAfter > 0 {
		d = retryAfter
	}
	if d >= remaining {
		return 0, false
	}
	return d, true
}
