package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fusebox-hq/fusebox"
)

// jitters are the values of jitter: and --jitter, for the schema and for
// help: the fusebox.Jitter kinds (TestJitterEnumIsTheDomains keeps them
// those Policy.Validate takes).
var jitters = []fusebox.Jitter{fusebox.JitterFull, fusebox.JitterEqual, fusebox.JitterDecorrelated, fusebox.JitterNone}

// JitterNames names the jitters for a message or a flag's help: "full,
// equal, decorrelated or none".
func JitterNames() string {
	names := make([]string, len(jitters))
	for i, j := range jitters {
		names[i] = string(j)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseJitter returns the jitter named s, as jitter: and --jitter write it.
// Which names are jitters, and what is said of one that is not, is
// Policy.Validate's rule: the domain's, in one place.
func ParseJitter(s string) (fusebox.Jitter, error) {
	if s == "" {
		return "", fmt.Errorf("no jitter named (want %s)", JitterNames())
	}
	var p fusebox.Policy
	p.Retry.Backoff.Jitter = fusebox.Jitter(s)
	var bad *fusebox.FieldError
	if errors.As(p.Validate(), &bad) {
		return "", errors.New(bad.Msg)
	}
	return p.Retry.Backoff.Jitter, nil
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
