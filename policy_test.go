package fusebox_test

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

func TestPolicyWithDefaults(t *testing.T) {
	t.Run("the zero policy gets every default", func(t *testing.T) {
		want := fusebox.Policy{
			Retry: fusebox.RetryPolicy{
				Attempts: 3,
				Backoff:  fusebox.Backoff{First: 2 * time.Second, Multiplier: 2, Max: 30 * time.Second, Jitter: fusebox.JitterFull},
				Timeout:  10 * time.Second,
				Deadline: time.Minute,
			},
			Breaker: breaker.Policy{
				TripAfter: 3, OpenFor: 30 * time.Second, OpenMultiplier: 2, OpenMax: 5 * time.Minute,
				Probes: 1, ProbeLease: 12 * time.Second,
			},
		}
		if got := (fusebox.Policy{}).WithDefaults(); !reflect.DeepEqual(got, want) {
			t.Errorf("WithDefaults() = %+v\nwant %+v", got, want)
		}
	})
	t.Run("set fields are kept", func(t *testing.T) {
		p := fusebox.Policy{
			Retry: fusebox.RetryPolicy{
				Attempts: 7,
				Backoff:  fusebox.Backoff{First: time.Second, Multiplier: 3, Max: time.Minute, Jitter: fusebox.JitterEqual},
				Timeout:  time.Second, Deadline: time.Hour,
			},
			Breaker: breaker.Policy{
				TripAfter: 5, FailureRate: &breaker.FailureRate{Threshold: 0.5, Window: 10},
				OpenFor: time.Second, OpenMultiplier: 1.5, OpenMax: time.Hour, Probes: 2, ProbeLease: time.Minute,
			},
		}
		if got := p.WithDefaults(); !reflect.DeepEqual(got, p) {
			t.Errorf("WithDefaults() = %+v\nwant %+v", got, p)
		}
	})
	t.Run("WithDefaults is idempotent", func(t *testing.T) {
		once := fusebox.Policy{Retry: fusebox.RetryPolicy{Timeout: time.Second}}.WithDefaults()
		if twice := once.WithDefaults(); !reflect.DeepEqual(once, twice) {
			t.Errorf("second WithDefaults changed %+v into %+v", once, twice)
		}
	})
	t.Run("open_max grows to cover a long open_for", func(t *testing.T) {
		got := fusebox.Policy{Breaker: breaker.Policy{OpenFor: 10 * time.Minute}}.WithDefaults()
		if got.Breaker.OpenMax != 10*time.Minute {
			t.Errorf("OpenMax = %s, want 10m", got.Breaker.OpenMax)
		}
	})
	t.Run("max_delay grows to cover a long backoff", func(t *testing.T) {
		got := fusebox.Policy{Retry: fusebox.RetryPolicy{Backoff: fusebox.Backoff{First: time.Minute}}}.WithDefaults()
		if got.Retry.Backoff.Max != time.Minute {
			t.Errorf("Max = %s, want 1m", got.Retry.Backoff.Max)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("defaults made an invalid policy: %v", err)
		}
	})
	t.Run("the probe lease outlives the attempt timeout", func(t *testing.T) {
		got := fusebox.Policy{Retry: fusebox.RetryPolicy{Timeout: 20 * time.Second}}.WithDefaults()
		if want := 22 * time.Second; got.Breaker.ProbeLease != want {
			t.Errorf("ProbeLease = %s, want %s", got.Breaker.ProbeLease, want)
		}
	})
}

// fieldsOf returns the config keys of the *FieldErrors joined in err.
func fieldsOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate returned %T, want errors joined", err)
	}
	var fields []string
	for _, e := range joined.Unwrap() {
		var fe *fusebox.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("Validate returned %T (%v), want *FieldError", e, e)
		}
		if !strings.HasPrefix(fe.Error(), fe.Field+": ") {
			t.Errorf("%q does not start with its key %q", fe.Error(), fe.Field)
		}
		fields = append(fields, fe.Field)
	}
	return fields
}

func TestPolicyValidate(t *testing.T) {
	nan := math.NaN()
	retry := func(f func(*fusebox.RetryPolicy)) fusebox.Policy {
		var p fusebox.Policy
		f(&p.Retry)
		return p
	}
	brk := func(f func(*breaker.Policy)) fusebox.Policy {
		var p fusebox.Policy
		f(&p.Breaker)
		return p
	}
	rate := func(fr breaker.FailureRate) fusebox.Policy {
		return fusebox.Policy{Breaker: breaker.Policy{FailureRate: &fr}}
	}
	tests := []struct {
		name string
		p    fusebox.Policy
		want []string
	}{
		{"the zero policy is valid: zero means default", fusebox.Policy{}, nil},
		{"the default policy is valid", fusebox.Policy{}.WithDefaults(), nil},
		{"a sane failure rate is valid", rate(breaker.FailureRate{Threshold: 0.5, Window: 20, MinAttempts: 10}), nil},
		{"a threshold of 100% is valid", rate(breaker.FailureRate{Threshold: 1, Window: 1}), nil},
		{"negative attempts", retry(func(r *fusebox.RetryPolicy) { r.Attempts = -1 }), []string{"attempts"}},
		{"negative backoff", retry(func(r *fusebox.RetryPolicy) { r.Backoff.First = -time.Second }), []string{"backoff"}},
		{"multiplier below 1 shrinks the wait", retry(func(r *fusebox.RetryPolicy) { r.Backoff.Multiplier = 0.5 }), []string{"multiplier"}},
		{"multiplier NaN", retry(func(r *fusebox.RetryPolicy) { r.Backoff.Multiplier = nan }), []string{"multiplier"}},
		{"negative max_delay", retry(func(r *fusebox.RetryPolicy) { r.Backoff.Max = -1 }), []string{"max_delay"}},
		{"max_delay below backoff", retry(func(r *fusebox.RetryPolicy) { r.Backoff.First, r.Backoff.Max = time.Minute, time.Second }), []string{"max_delay"}},
		{"unknown jitter", retry(func(r *fusebox.RetryPolicy) { r.Backoff.Jitter = "random" }), []string{"jitter"}},
		{"negative timeout", retry(func(r *fusebox.RetryPolicy) { r.Timeout = -1 }), []string{"timeout"}},
		{"negative deadline", retry(func(r *fusebox.RetryPolicy) { r.Deadline = -1 }), []string{"deadline"}},
		{"negative trip_after", brk(func(b *breaker.Policy) { b.TripAfter = -3 }), []string{"trip_after"}},
		{"threshold 0 never trips", rate(breaker.FailureRate{Threshold: 0, Window: 10}), []string{"failure_rate.threshold"}},
		{"threshold above 100%", rate(breaker.FailureRate{Threshold: 1.5, Window: 10}), []string{"failure_rate.threshold"}},
		{"threshold NaN", rate(breaker.FailureRate{Threshold: nan, Window: 10}), []string{"failure_rate.threshold"}},
		{"empty window", rate(breaker.FailureRate{Threshold: 0.5}), []string{"failure_rate.window"}},
		{"min_attempts above the window", rate(breaker.FailureRate{Threshold: 0.5, Window: 10, MinAttempts: 11}), []string{"failure_rate.min_attempts"}},
		{"negative min_attempts", rate(breaker.FailureRate{Threshold: 0.5, Window: 10, MinAttempts: -1}), []string{"failure_rate.min_attempts"}},
		{"negative open_for", brk(func(b *breaker.Policy) { b.OpenFor = -1 }), []string{"open_for"}},
		{"open_multiplier below 1", brk(func(b *breaker.Policy) { b.OpenMultiplier = 0.9 }), []string{"open_multiplier"}},
		{"open_multiplier NaN", brk(func(b *breaker.Policy) { b.OpenMultiplier = nan }), []string{"open_multiplier"}},
		{"negative open_max", brk(func(b *breaker.Policy) { b.OpenMax = -1 }), []string{"open_max"}},
		{"open_max below open_for", brk(func(b *breaker.Policy) { b.OpenFor, b.OpenMax = time.Minute, time.Second }), []string{"open_max"}},
		{"open_max below the default open_for", brk(func(b *breaker.Policy) { b.OpenMax = 15 * time.Second }), []string{"open_max"}},
		{"open_max below auto's first guess: auto stays within it", brk(func(b *breaker.Policy) { b.OpenMax, b.LearnOpenFor = 15*time.Second, true }), nil},
		{"negative probes", brk(func(b *breaker.Policy) { b.Probes = -1 }), []string{"probes"}},
		{"negative probe_lease", brk(func(b *breaker.Policy) { b.ProbeLease = -1 }), []string{"probe_lease"}},
		{"every problem is reported at once, in config order", fusebox.Policy{
			Retry:   fusebox.RetryPolicy{Attempts: -1, Deadline: -1},
			Breaker: breaker.Policy{FailureRate: &breaker.FailureRate{Threshold: 2}, Probes: -1},
		}, []string{"attempts", "deadline", "failure_rate.threshold", "failure_rate.window", "probes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldsOf(t, tt.p.Validate()); !slices.Equal(got, tt.want) {
				t.Errorf("Validate() reports %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFieldErrorMessagesNameTheValue(t *testing.T) {
	p := fusebox.Policy{Breaker: breaker.Policy{
		OpenFor: time.Minute, OpenMax: 30 * time.Second,
		FailureRate: &breaker.FailureRate{Threshold: 1.5, Window: 10},
	}}
	got := p.Validate().Error()
	for _, want := range []string{
		"failure_rate.threshold: must be above 0% and at most 100%, got 150%",
		"open_max: must be at least open_for (1m0s), got 30s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate() = %q, want it to contain %q", got, want)
		}
	}
}
