package memlimit

import (
	"os"
	"syscall"
)

// limitAddressSpace caps the process's address space at its size now plus
// 4*total: the child's backstop against one reservation of gigabytes, which
// the parent's watch of its resident set would see too late.
func limitAddressSpace(total int64) error {
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		return err
	}
	defer statm.Close()
	size, err := StatmBytes(statm, 0)
	if err != nil {
		return err
	}
	lim := uint64(size + 4*total)
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: lim})
}
