// Package human reads durations as people write them (ParseDuration: the
// config, flags and the daemon's API) and writes them as a person reads
// them at a glance, in every message fusebox prints or logs. It imports
// only the standard library, so that the domain (the root and breaker) may
// use it too.
package human

import (
	"strings"
	"time"
)

// Round trims d to the precision a person reads at a glance: whole
// seconds from a minute, tenths from a second, else milliseconds.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// String is Round(d) without the zero units Go's duration writes at its
// end: "25s", "1m30s", "2m", "2h", "150ms".
func String(d time.Duration) string {
	s := Round(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
