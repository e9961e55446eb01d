//go:build !linux

package file_test

import (
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// bindReadOnly is bind_linux_test.go's: macOS and FreeBSD have no bind
// mount (nullfs on FreeBSD is one to set up by hand), so root's read-only
// dir is a Linux-only case.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	testenv.Skip(t, "running as root, a read-only dir needs a read-only bind mount, made here on Linux only")
}
