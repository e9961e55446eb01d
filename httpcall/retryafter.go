package httpcall

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a server may ask for.
const MaxRetryAfter = 24 * time.Hour

// ParseRetryAfter reads a Retry-After header value: delay-seconds or an
// HTTP-date, relative to now. A date in the past means no wait; longer waits
// are capped at MaxRetryAfter. It reports false for anything else: garbage,
// negative or fractional numbers, and numbers too large to be a
// time.Duration, which are not capped but refused, since such a server is
// confused rather than busy.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		secs, err := strconv.ParseInt(v, 10, 64)
		if err != nil || secs > maxWholeSeconds {
			return 0, false
		}
		return min(time.Duration(secs)*time.Second, MaxRetryAfter), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter), true
}

// maxWholeSeconds is the most whole seconds a time.Duration holds.
const maxWholeSeconds = int64((1<<63 - 1) / time.Second)

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
