package main

import (
	"slices"
	"testing"
	"time"
)

func TestScaleOfACronMinuteIsOneTick(t *testing.T) {
	tests := []struct {
		name string
		tick time.Duration
		in   time.Duration
		want time.Duration
	}{
		{"a minute is a tick", time.Second, time.Minute, time.Second},
		{"bash's first wait", time.Second, 2 * time.Second, 33333 * time.Microsecond},
		{"bash's window", time.Second, 300 * time.Second, 5 * time.Second},
		{"fusebox's open_max", time.Second, 5 * time.Minute, 5 * time.Second},
		{"quick ticks scale further", 250 * time.Millisecond, 5 * time.Minute, 1250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Scale{Tick: tt.tick}).Of(tt.in); got != tt.want {
				t.Errorf("Of(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestScaleFuseboxFlagsMatchTheClassicScript(t *testing.T) {
	got := Scale{Tick: time.Second}.FuseboxFlags()
	want := []string{
		"--attempts=3", "--backoff=33.333ms", "--max-delay=500ms", "--timeout=166.667ms",
		"--deadline=1s", "--trip-after=3", "--open-for=5s", "--open-max=5s",
	}
	if !slices.Equal(got, want) {
		t.Errorf("FuseboxFlags() =\n%q\nwant\n%q", got, want)
	}
}

func TestScaleFactorDrivesCurlAndBash(t *testing.T) {
	sc := Scale{Tick: time.Second}
	if got := sc.Factor(); got != 60 {
		t.Errorf("Factor() = %d, want 60", got)
	}
	if got := sc.FaketimeRate(); got != "+0 x60" {
		t.Errorf("FaketimeRate() = %q, want %q", got, "+0 x60")
	}
}

func TestScaleRejectsTicksThatDoNotDivideAMinute(t *testing.T) {
	for _, tick := range []time.Duration{0, -time.Second, 7 * time.Second, 2 * time.Minute} {
		if err := (Scale{Tick: tick}).Validate(); err == nil {
			t.Errorf("Validate(%s) = nil, want an error", tick)
		}
	}
	for _, tick := range []time.Duration{time.Second, 250 * time.Millisecond, time.Minute} {
		if err := (Scale{Tick: tick}).Validate(); err != nil {
			t.Errorf("Validate(%s) = %v", tick, err)
		}
	}
}
