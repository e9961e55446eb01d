//go:build !darwin

package file

import "golang.org/x/sys/unix"

const utimeNow = unix.UTIME_NOW // see utime_darwin.go
