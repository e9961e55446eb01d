package breaker

import (
	"encoding/json"
	"time"
)

// Instant is a point in time as seen by one machine: the wall clock, plus the
// boot ID and the CLOCK_BOOTTIME reading when the clock that took it knows them.
// Within one boot, elapsed time is measured on the boot clock, which does not
// jump when NTP corrects the wall clock. An Instant never set is the zero
// value (a zero Wall).
type Instant struct {
	Wall     time.Time     `json:"wall"`
	Boot     string        `json:"boot,omitempty"`
	BootTime time.Duration `json:"boottime_ns,omitempty"`
}

// Since returns the time elapsed from earlier to i, and whether it could be
// measured reliably: on the boot clock when both were taken in the same boot,
// else on the wall clock. An earlier instant in the future of the clock that
// reads it is suspect: a boot clock ahead (a time namespace sharing the boot
// ID) falls back to the wall clock, and a wall clock ahead gives 0. Either
// way the answer is unreliable (false), so the caller rebases under the lock
// and the period restarts at most from now, never waiting for the other
// clock to catch up.
func (i Instant) Since(earlier Instant) (time.Duration, bool) {
	sameBoot := i.Boot != "" && i.Boot == earlier.Boot
	if sameBoot && i.BootTime >= earlier.BootTime {
		return i.BootTime - earlier.BootTime, true
	}
	d := i.Wall.Sub(earlier.Wall)
	if d < 0 {
		return 0, false
	}
	return d, !sameBoot && i.Boot == earlier.Boot
}

// Duration is a time.Duration that reads as "1m30s" in JSON, so state files
// stay readable with cat.
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
