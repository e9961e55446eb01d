//go:build darwin || freebsd

package main

import "golang.org/x/sys/unix"

// getTermios is the ioctl that reads a terminal's settings (isTerminal):
// TIOCGETA on macOS and FreeBSD, where Linux has TCGETS.
const getTermios = unix.TIOCGETA
