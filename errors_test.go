package fusebox_test

import (
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
