package human

import (
	"errors"
	"fmt"
	"math"
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
