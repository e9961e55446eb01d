package runner_test

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// pidfd opens a pidfd for the live process pid and returns a function that
// waits until the process has exited. The bound, well inside the processes'
// sleep 300, only keeps a broken test from hanging; the process is killed when
// the test ends, so a failed test leaves nothing behind.
func pidfd(t *testing.T, pid int) (exited func()) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		testenv.Skip(t, "pidfd_open is not supported by this kernel: %v", err)
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		unix.Close(fd)
	})
	return func() {
		t.Helper()
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int(time.Minute/time.Millisecond))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				t.Fatalf("process %d still running a minute after the call ended (poll: %v)", pid, err)
			}
			return
		}
	}
}
