package file

import (
	"errors"

	"golang.org/x/sys/unix"
)

// allocate makes the open file size bytes long with its blocks allocated
// now: a write through a mapping to a block the disk has no room for would
// fault, where this says why. A file system without fallocate (some FUSE
// ones) gets the length alone, as elsewhere (alloc_other.go).
func allocate(fd int, size int64) error {
	err := unix.Fallocate(fd, 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = unix.Ftruncate(fd, size)
	}
	return err
}
