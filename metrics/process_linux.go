package metrics

import (
	"bytes"
	"os"
	"strconv"

	"syscall"
)

// residentBytes is the second field of /proc/self/statm (resident pages)
// times the page size.
func residentBytes() (float64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return float64(pages) * float64(os.Getpagesize()), true
}

// openFDs counts the entries of /proc/self/fd, less the one the count
// itself holds open.
func openFDs() (float64, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, false
	}
	return float64(len(names) - 1), true
}

// maxFDs is the soft RLIMIT_NOFILE: what the process may open.
func maxFDs() (float64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return float64(lim.Cur), true
}
