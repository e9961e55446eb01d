//go:build !linux

package file

import "golang.org/x/sys/unix"

// allocate makes the open file size bytes long. Unlike Linux's (which
// allocates the blocks with fallocate), it only sets the length: macOS and
// FreeBSD allocate a block on its first write, so on a full disk the
// counters' first add through the mapping may fault (withCounts reports it
// as an error, not a crash) or, depending on the file system, be lost when
// the page is written back, instead of Count failing here at once.
func allocate(fd int, size int64) error { return unix.Ftruncate(fd, size) }
