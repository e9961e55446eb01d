package fusebox

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// These tests build Do's errors by hand, with the reasons to stop that
// only Do sets.

func TestExhaustedErrorWrapsTheLastError(t *testing.T) {
	last := &Failure{Err: io.ErrUnexpectedEOF, Reason: "HTTP 503"}
	err := error(&ExhaustedError{Name: "api", Attempts: 3, stop: stopAttempts, Err: last})
	if got, want := err.Error(), "api: attempts exhausted after 3 attempts: HTTP 503"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var f *Failure
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &f) || f != last {
		t.Error("the last attempt's error is not reachable through errors.Is/As")
	}
}

func TestExhaustedErrorDescribesWhyWithTypedReasons(t *testing.T) {
	attempt := func(cut attemptCut, limit time.Duration) *attemptError {
		return &attemptError{Attempt: 2, Reason: "no response", cut: cut, Limit: limit, Err: io.EOF}
	}
	tests := []struct {
		name            string
		err             ExhaustedError
		callersDeadline string
		want            string
	}{
		{"attempts exhausted, the last one timed out", ExhaustedError{Attempts: 3, stop: stopAttempts, Err: attempt(cutTimeout, 5*time.Second)}, "",
			"attempts exhausted after 3 attempts: timeout after 5s: no response"},
		{"the policy's deadline cut the attempt", ExhaustedError{Attempts: 3, stop: stopAttempts, Err: attempt(cutDeadline, 1500*time.Millisecond)}, "chain deadline of 15s",
			"attempts exhausted after 3 attempts: deadline of 1.5s reached: no response"},
		{"the caller's deadline is named by the caller", ExhaustedError{Attempts: 1, stop: stopCallersDeadline, Err: attempt(cutCallersDeadline, 0)}, "chain deadline of 150ms",
			"chain deadline of 150ms reached after 1 attempt: no response"},
		{"the caller's deadline, unnamed", ExhaustedError{Attempts: 1, stop: stopCallersDeadline, Err: attempt(cutCallersDeadline, 0)}, "",
			"deadline reached after 1 attempt: no response"},
		{"a Retry-After past the deadline", ExhaustedError{Attempts: 1, stop: stopRetryAfter, RetryAfter: 2 * time.Minute, Err: attempt(notCut, 0)}, "",
			"server asked to wait 2m0s, past the deadline after 1 attempt: no response"},
		{"the circuit opened", ExhaustedError{Attempts: 2, stop: stopOpened, Err: attempt(notCut, 0)}, "",
			"circuit opened after 2 attempts: no response"},
		{"a deadline before any attempt", ExhaustedError{Attempts: 0, stop: stopDeadline, Err: context.DeadlineExceeded}, "",
			"deadline reached after 0 attempts: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Describe(tt.callersDeadline); got != tt.want {
				t.Errorf("Describe(%q) = %q, want %q", tt.callersDeadline, got, tt.want)
			}
		})
	}
}
