package reliability

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestASIGKILLedRunTakesItsCommandWithIt: a `fusebox run` killed by SIGKILL
// (the OOM killer, a supervisor that gave up waiting) cannot stop its
// command, and without the parent-death signal the command ran on, past
// its --timeout, reparented to init. The kernel now kills it with its
// parent.
func TestASIGKILLedRunTakesItsCommandWithIt(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	d := t.TempDir()
	pidFile := filepath.Join(d, "pid")
	// The command is sleep itself (the shell execs it): the child
	// fusebox started, which is what the parent-death signal reaches. Left
	// alone it would run 300s, ten times its --timeout.
	cmd := fbCmd(state, nil, testenv.RunArgs("x", []string{"--timeout", "30s"}, "sh", "-c", `echo $$ > "$0"; exec sleep 300`, pidFile)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var pid int
	testenv.WaitFor(t, "the command to exec sleep", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		argv, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		return strings.HasPrefix(string(argv), "sleep\x00")
	})
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d), the command: %v", pid, err)
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) // a failed test leaves nothing running
		unix.Close(fd)
	})

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true
	// The kernel signals the child as its parent's threads exit; the bound
	// only keeps a broken build from hanging the test, and is far below
	// the 300s the sleep would run.
	const bound = time.Minute
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(bound/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll the command's pidfd: %v", err)
		}
		if n == 0 {
			t.Fatalf("the command (sleep 300, pid %d) outlived its parent: still running %s after fusebox was SIGKILLed", pid, bound)
		}
		return
	}
}
