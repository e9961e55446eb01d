//go:build darwin || freebsd

package runner_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pidfd is pidfd_linux_test.go's on macOS and FreeBSD, which have no
// pidfd: a kqueue watches the live process pid for its exit, and the
// returned function waits for it, within the same bound. The process is
// killed when the test ends if it was not seen to exit.
func pidfd(t *testing.T, pid int) (exited func()) {
	t.Helper()
	kq, err := unix.Kqueue()
	if err != nil {
		t.Fatalf("kqueue: %v", err)
	}
	var watch unix.Kevent_t
	unix.SetKevent(&watch, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	watch.Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, []unix.Kevent_t{watch}, nil, nil); err != nil {
		unix.Close(kq)
		t.Fatalf("kevent for process %d: %v", pid, err)
	}
	wait := func(d time.Duration) bool {
		ts := unix.NsecToTimespec(int64(d))
		for {
			n, err := unix.Kevent(kq, nil, make([]unix.Kevent_t, 1), &ts)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err == nil && n == 1
		}
	}
	gone := false
	t.Cleanup(func() {
		if !gone && !wait(0) {
			unix.Kill(pid, unix.SIGKILL) // still running: its exit has not been reported
		}
		unix.Close(kq)
	})
	return func() {
		t.Helper()
		if gone = wait(time.Minute); !gone {
			t.Fatalf("process %d still running a minute after the call ended", pid)
		}
	}
}
