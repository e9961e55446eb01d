package config

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"30s", 30 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"1d12h", 36 * time.Hour, ""},
		{"1.5d", 36 * time.Hour, ""},
		{"2h1d", 26 * time.Hour, ""},
		{"+1d", 24 * time.Hour, ""},
		{"-0s", 0, ""},
		{"106751d", 106751 * 24 * time.Hour, ""},
		{"-5s", 0, "negative"},
		{"-1d", 0, "negative"},
		{"", 0, "invalid duration"},
		{"10", 0, "invalid duration"},
		{"d", 0, "invalid duration"},
		{"1dd", 0, "invalid duration"},
		{"1d2", 0, "invalid duration"},
		{"--1d", 0, "invalid duration"},
		{"1 d", 0, "invalid duration"},
		{"5 minutes", 0, "invalid duration"},
		{"106752d", 0, "invalid duration"}, // past time.Duration's 292 years
		{"106751d1000h", 0, "invalid duration"},
	}
	for _, tt := range tests {
		got, err := human.ParseDuration(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("human.ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("human.ParseDuration(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true},
		{"100B", 100, true},
		{"10KiB", 10 << 10, true},
		{"10MiB", 10 << 20, true},
		{"2GiB", 2 << 30, true},
		{"512 KB", 512e3, true},
		{"10MB", 10e6, true},
		{"1GB", 1e9, true},
		{"-1", -1, true}, // the caller says negative sizes are an error
		{"1.5MiB", 0, false},
		{"10mb", 0, false},
		{"MiB", 0, false},
		{"", 0, false},
		{"9223372036854775807GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestNearest(t *testing.T) {
	keys := []string{"attempts", "open_for", "open_max", "url"}
	for in, want := range map[string]string{"atempts": "attempts", "open_fro": "open_for", "ur": "url", "URL": "", "colour": ""} {
		if got := nearest(in, keys); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseJitter(t *testing.T) {
	for _, s := range []string{"full", "equal", "decorrelated", "none"} {
		if j, err := ParseJitter(s); err != nil || string(j) != s {
			t.Errorf("ParseJitter(%q) = %q, %v", s, j, err)
		}
	}
	for _, s := range []string{"", "Full", "random"} {
		if _, err := ParseJitter(s); err == nil || !strings.Contains(err.Error(), "want full, equal, decorrelated or none") {
			t.Errorf("ParseJitter(%q) = %v, want an error listing the kinds", s, err)
		}
	}
}
