//go:build !linux && !darwin

package sysclock

import "time"

// FreeBSD gives no boot ID to tell one boot's clock readings from the
// next's, so Clock is the wall clock alone there, as fusebox.WallClock
// is. What that gives up: an open period is measured on the wall clock, so
// a step of it (NTP correcting a clock that was wrong at boot, say) makes
// the period longer or shorter by the step, where Linux and macOS measure
// it on the boot clock.
func bootID() string { return "" }

func bootTime() (time.Duration, bool) { return 0, false }
