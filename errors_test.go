package fusebox_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

func TestOpenErrorReadsWell(t *testing.T) {
	tests := []struct {
		err  breaker.OpenError
		want string
	}{
		{breaker.OpenError{Name: "api", Phase: breaker.Open, ReopensIn: 29*time.Second + 987*time.Millisecond}, "circuit api is open (probe in 30s)"},
		{breaker.OpenError{Name: "api", Phase: breaker.Open, ReopensIn: 4*time.Minute + 31*time.Second + 400*time.Millisecond}, "circuit api is open (probe in 4m31s)"},
		{breaker.OpenError{Name: "api", Phase: breaker.Open, ReopensIn: 1234567 * time.Nanosecond}, "circuit api is open (probe in 1ms)"},
		{breaker.OpenError{Name: "api", Phase: breaker.HalfOpen, Probing: true}, "circuit api is half-open and another caller is probing it"},
		{breaker.OpenError{Name: "api", Phase: breaker.ForcedOpen}, "circuit api is forced open until reset"},
		{breaker.OpenError{Name: "api", Phase: breaker.ForcedOpen, ReopensIn: 90 * time.Second}, "circuit api is forced open (closes in 1m30s)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(&tt.err, breaker.ErrOpen) {
			t.Errorf("%q does not match ErrOpen", tt.want)
		}
	}
	if errors.Is(&breaker.OpenError{}, io.EOF) {
		t.Error("an OpenError matches io.EOF")
	}
}

func TestExhaustedErrorWrapsTheLastError(t *testing.T) {
	last := &fusebox.Failure{Err: io.ErrUnexpectedEOF, Reason: "HTTP 503"}
	err := error(&fusebox.ExhaustedError{Name: "api", Attempts: 3, Stop: fusebox.StopAttempts, Err: last})
	if got, want := err.Error(), "api: attempts exhausted after 3 attempts: HTTP 503"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var f *fusebox.Failure
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &f) || f != last {
		t.Error("the last attempt's error is not reachable through errors.Is/As")
	}
}

func TestExhaustedErrorDescribesWhyWithTypedReasons(t *testing.T) {
	attempt := func(cut fusebox.Cut, limit time.Duration) *fusebox.AttemptError {
		return &fusebox.AttemptError{Attempt: 2, Reason: "no response", Cut: cut, Limit: limit, Err: io.EOF}
	}
	tests := []struct {
		name            string
		err             fusebox.ExhaustedError
		callersDeadline string
		want            string
	}{
		{"attempts exhausted, the last one timed out", fusebox.ExhaustedError{Attempts: 3, Stop: fusebox.StopAttempts, Err: attempt(fusebox.CutTimeout, 5*time.Second)}, "",
			"attempts exhausted after 3 attempts: timeout after 5s: no response"},
		{"the policy's deadline cut the attempt", fusebox.ExhaustedError{Attempts: 3, Stop: fusebox.StopAttempts, Err: attempt(fusebox.CutDeadline, 1500*time.Millisecond)}, "chain deadline of 15s",
			"attempts exhausted after 3 attempts: deadline of 1.5s reached: no response"},
		{"the caller's deadline is named by the caller", fusebox.ExhaustedError{Attempts: 1, Stop: fusebox.StopCallersDeadline, Err: attempt(fusebox.CutCallersDeadline, 0)}, "chain deadline of 150ms",
			"chain deadline of 150ms reached after 1 attempt: no response"},
		{"the caller's deadline, unnamed", fusebox.ExhaustedError{Attempts: 1, Stop: fusebox.StopCallersDeadline, Err: attempt(fusebox.CutCallersDeadline, 0)}, "",
			"deadline reached after 1 attempt: no response"},
		{"a Retry-After past the deadline", fusebox.ExhaustedError{Attempts: 1, Stop: fusebox.StopRetryAfter, RetryAfter: 2 * time.Minute, Err: attempt(fusebox.NotCut, 0)}, "",
			"server asked to wait 2m0s, past the deadline after 1 attempt: no response"},
		{"the circuit opened", fusebox.ExhaustedError{Attempts: 2, Stop: fusebox.StopOpened, Err: attempt(fusebox.NotCut, 0)}, "",
			"circuit opened after 2 attempts: no response"},
		{"a deadline before any attempt", fusebox.ExhaustedError{Attempts: 0, Stop: fusebox.StopDeadline, Err: context.DeadlineExceeded}, "",
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

func TestPermanent(t *testing.T) {
	err := fusebox.Permanent(io.EOF)
	var f *fusebox.Failure
	if !errors.As(err, &f) || !f.Permanent || !errors.Is(err, io.EOF) || err.Error() != "EOF" {
		t.Errorf("Permanent(io.EOF) = %#v", err)
	}
	// A caller writing `return fusebox.Permanent(doIt())` must not turn a
	// success into a failure (whose Error() would dereference nil).
	if err := fusebox.Permanent(nil); err != nil {
		t.Errorf("Permanent(nil) = %#v, want nil", err)
	}
}

func TestValidateName(t *testing.T) {
	for _, name := range []string{"a", "api.example.com", "db_primary-2", strings.Repeat("x", fusebox.MaxNameLen)} {
		if err := fusebox.ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v", name, err)
		}
	}
	tests := []struct{ name, want string }{
		{"", "circuit name is empty"},
		{".", `circuit name "." is not allowed`},
		{"..", `circuit name ".." is not allowed`},
		{"a/b", `circuit name "a/b" has "/" at byte 1: use only letters, digits, '.', '_' and '-'`},
		{"café", `has "\xc3" at byte 3`},
		{"has space", `has " " at byte 3`},
		{strings.Repeat("x", fusebox.MaxNameLen+1), "is 65 characters long (at most 64)"},
	}
	for _, tt := range tests {
		err := fusebox.ValidateName(tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateName(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}
