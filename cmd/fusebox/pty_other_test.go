//go:build !linux

package main

import (
	"os"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// openPTY is pty_linux_test.go's: a pseudo-terminal is opened here the
// Linux way (/dev/ptmx, TIOCSPTLCK, /dev/pts/N) only.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	testenv.Skip(t, "the pseudo-terminal of this test is opened the Linux way only")
	return nil, nil
}
