package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a Go duration ("90s", "1h30m") that may also use a
// "d" unit of 24 hours ("7d", "1d12h", "1.5d"). Negative durations are an
// error: no setting in a config means a negative time.
func ParseDuration(s string) (time.Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number and a unit (ns, us, ms, s, m, h, d), like 30s, 1h30m or 7d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

func parseDuration(s string) (time.Duration, error) {
	if !strings.Contains(s, "d") {
		return time.ParseDuration(s)
	}
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimLeft(s, "+-")
	if len(s)-len(rest) > 1 {
		return 0, errors.New("more than one sign")
	}
	var total time.Duration
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if i <= 0 {
			return 0, errors.New("missing number")
		}
		j := strings.IndexFunc(rest[i:], func(r rune) bool { return r == '.' || '0' <= r && r <= '9' })
		if j < 0 {
			j = len(rest) - i
		}
		num, unit := rest[:i], rest[i:i+j]
		rest = rest[i+j:]
		part, err := durationPart(num, unit)
		if err != nil {
			return 0, err
		}
		if total > math.MaxInt64-part {
			return 0, errors.New("overflow")
		}
		total += part
	}
	if neg {
		return -total, nil
	}
	return total, nil
}

// durationPart is one number and unit of a duration, like "1.5" and "d".
func durationPart(num, unit string) (time.Duration, error) {
	if unit != "d" {
		return time.ParseDuration(num + unit)
	}
	h, err := time.ParseDuration(num + "h")
	if err != nil {
		return 0, err
	}
	if h > math.MaxInt64/24 {
		return 0, errors.New("overflow")
	}
	return 24 * h, nil
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
