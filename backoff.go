package fusebox

import (
	"math"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// exp returns the un-jittered delay after the given failed attempt (1-based):
// First * Multiplier^(attempt-1), capped at Max. It does not overflow for any
// attempt count.
func (b Backoff) exp(attempt int) time.Duration {
	return breaker.Exp(b.First, b.Multiplier, b.Max, attempt)
}

// Delay returns the wait after the given failed attempt (1-based). With
// JitterNone it is the un-jittered First * Multiplier^(attempt-1), capped at
// Max, which full and equal jitter reach with a draw of 1. draw is a
// uniform random number in [0, 1) and prev the previous wait (used by
// decorrelated jitter; 0 before the first wait), so the result is a pure
// function of its arguments and tests can be exact. b must have its defaults
// set (Policy.WithDefaults).
func (b Backoff) Delay(attempt int, prev time.Duration, draw float64) time.Duration {
	draw = min(max(draw, 0), 1)
	switch b.Jitter {
	case JitterNone:
		return b.exp(attempt)
	case JitterEqual:
		exp := b.exp(attempt)
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
		return scale(b.exp(attempt), draw)
	}
}

func scale(d time.Duration, draw float64) time.Duration {
	return time.Duration(float64(d) * draw)
}

// NoDeadline is the remaining time of a call without a deadline.
const NoDeadline = time.Duration(math.MaxInt64)

// wait decides whether the call retries after the given failed attempt and how
// long it waits first. retryAfter, when positive, is the server's Retry-After
// and replaces the computed delay. remaining is the time left before the
// call's deadline (NoDeadline when it has none): a wait that would reach the
// deadline is not taken, so no wait ever outlasts the deadline, and a
// Retry-After longer than what remains gives up at once, letting a fallback
// answer instead.
func (p RetryPolicy) wait(attempt int, prev time.Duration, draw float64, retryAfter, remaining time.Duration) (time.Duration, bool) {
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

// Longest returns the longest a call under p takes when no server asks for
// a wait (Retry-After replaces the backoff's, up to what remains of the
// deadline): Attempts attempts of Timeout each, with the longest wait the
// backoff allows between them, or Deadline when that comes first (capped).
// p must have its defaults set (Policy.WithDefaults).
func (p RetryPolicy) Longest() (d time.Duration, capped bool) {
	add := func(a, b time.Duration) time.Duration { // saturating at NoDeadline
		if a > NoDeadline-b {
			return NoDeadline
		}
		return a + b
	}
	var prev time.Duration
	for a := 1; a <= p.Attempts && d < p.Deadline; a++ {
		d = add(d, p.Timeout)
		if a == p.Attempts {
			break
		}
		w := p.Backoff.Delay(a, prev, 1) // a draw of 1: the longest wait
		if w >= p.Backoff.Max {
			// Every wait from here on is Max: the rest at once, not one
			// turn per attempt (attempts may be in the millions).
			rest := time.Duration(p.Attempts - a)
			if each := add(p.Timeout, p.Backoff.Max); each > 0 && rest <= NoDeadline/each {
				d = add(d, rest*each) // a wait and an attempt each
			} else {
				d = NoDeadline
			}
			break
		}
		d, prev = add(d, w), w
	}
	if d >= p.Deadline {
		return p.Deadline, true
	}
	return d, false
}
