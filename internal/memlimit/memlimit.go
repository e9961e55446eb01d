// Package memlimit holds the process-wide memory limits of jq's child
// process (httpcall.IsolateJQ): Go's soft memory limit and, on Linux, an
// address-space limit. They are a program's choice, not a library's: the
// fusebox command passes Child to IsolateJQ, which calls it only in the child
// it started of the same binary.
package memlimit

import (
	"bytes"
	"errors"
	"os"
	"runtime/debug"
	"strconv"
)

// Child limits this process, jq's child, whose parent keeps its resident set
// within bound bytes (it watches and kills it): Go's memory limit at three
// quarters of bound makes the collector work hard before the parent's bound,
// and the address space is capped at its size now plus four times bound, a
// backstop for when the parent is starved of CPU: the reservation a single
// step of gigabytes needs is refused at once, and the Go runtime dies of it
// ("out of memory"). RLIMIT_DATA would not do: the runtime maps its heap over
// address space it has reserved, which Linux does not count against that
// limit.
func Child(bound int64) error {
	debug.SetMemoryLimit(bound * 3 / 4)
	if raceBuild {
		return nil
	}
	return limitAddressSpace(bound)
}

// StatmBytes returns field i of a /proc/PID/statm in bytes: 0 the address
// space's size, 1 the resident set.
func StatmBytes(statm *os.File, i int) (int64, error) {
	var buf [128]byte
	n, err := statm.ReadAt(buf[:], 0)
	if n == 0 {
		return 0, err
	}
	f := bytes.Fields(buf[:n])
	if len(f) <= i {
		return 0, errors.New("short /proc/self/statm")
	}
	pages, err := strconv.ParseInt(string(f[i]), 10, 64)
	return pages * int64(os.Getpagesize()), err
}
