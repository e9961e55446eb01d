//go:build unix

package serve

import "syscall"

// peek reports whether the socket fd has bytes to read, without reading
// them or waiting for any.
func peek(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == nil && n > 0
}
