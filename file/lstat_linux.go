//go:build linux && (amd64 || arm64)

package file

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lstatJoin lstats the path that is the concatenation of parts, without
// allocating: the path is put together, NUL-terminated, in a buffer on the
// stack and handed to fstatat itself (unix.Lstat copies its string to the
// heap first). The daemon lstats a circuit's files three times a call. A
// path too long for the buffer takes unix.Lstat's way.
func lstatJoin(st *unix.Stat_t, parts ...string) error {
	var buf [512]byte
	n := 0
	for _, p := range parts {
		if n+len(p) >= len(buf) {
			return lstatJoined(st, parts)
		}
		if strings.IndexByte(p, 0) >= 0 {
			return unix.EINVAL // as unix.Lstat refuses it, rather than stat a shorter path
		}
		n += copy(buf[n:], p)
	}
	buf[n] = 0
	dirfd := unix.AT_FDCWD
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if errno != 0 {
		return errno // an Errno, as unix.Lstat returns it
	}
	return nil
}
