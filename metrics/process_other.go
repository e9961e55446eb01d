//go:build !linux

package metrics

// Outside Linux the process's own figures are not read: only go_goroutines
// is exposed.
func residentBytes() (float64, bool) { return 0, false }
func openFDs() (float64, bool)       { return 0, false }
func maxFDs() (float64, bool)        { return 0, false }
