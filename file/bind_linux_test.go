package file_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// bindReadOnly mounts dir read-only on itself until the test ends.
func bindReadOnly(t *testing.T, dir string) {
	t.Helper()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		testenv.Skip(t, "running as root, a read-only dir needs a read-only bind mount, and mount failed: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		testenv.Skip(t, "running as root, a read-only dir needs a read-only bind mount, and remount failed: %v", err)
	}
}
