package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox-hq/fusebox"
)

// jitters are the values of jitter: and --jitter: the fusebox.Jitter kinds.
var jitters = []fusebox.Jitter{fusebox.JitterFull, fusebox.JitterEqual, fusebox.JitterDecorrelated, fusebox.JitterNone}

// ParseJitter returns the jitter named s, as jitter: and --jitter write it.
func ParseJitter(s string) (fusebox.Jitter, error) {
	if j := fusebox.Jitter(s); slices.Contains(jitters, j) {
		return j, nil
	}
	return "", fmt.Errorf("unknown jitter %q (want full, equal, decorrelated or none)", s)
}

// sizeUnits are the units of a byte size, longest first so "MiB" is not
// read as "B".
var sizeUnits = []struct {
	name string
	size int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// parseSize parses a byte size: a whole number with an optional unit (B,
// KiB, MiB, GiB, KB, MB, GB), like "10MiB" or "512 KB".
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.name); ok {
			num, mult = strings.TrimRight(n, " "), u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("invalid size %q: want a whole number of bytes with an optional unit (B, KiB, MiB, GiB, KB, MB, GB), like 10MiB", s)
	}
	return n * mult, nil
}

// ParseShare parses a share as a percentage ("20%") or a fraction (0.2),
// as threshold and retry_budget are written in a config. A bare number
// above 1 is an error: 20 is more likely 20% than twenty times.
func ParseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	switch {
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("want a share like 20%% or 0.2, got %q", s)
	case v < 0:
		return 0, fmt.Errorf("share %q is negative", s)
	case pct:
		return v / 100, nil
	case v > 1:
		return 0, fmt.Errorf("want a share like 20%% or 0.2, got %s (write %s%% for a percentage)", s, s)
	}
	return v, nil
}
