package reliability

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
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

// TestADescendantFuseboxMayNotSignalIsNamedInAWarning: a descendant that
// became another user for good (sudo, su: a set-uid program that sets its
// real uid too, as a set-uid copy of setpriv does here) cannot be ended by
// a fusebox run as an ordinary user. It is left running and named in one
// WARN line, as docs/run.md says, and the run still ends at its timeout.
func TestADescendantFuseboxMayNotSignalIsNamedInAWarning(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "a set-uid program of root's, and fusebox run as another user, need root")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		testenv.Skip(t, "no setpriv (util-linux): %v", err)
	}
	base, err := os.MkdirTemp("", "fusebox-setuid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	copyTo := func(from, to string, mode os.FileMode) string {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(to, b, 0o700)
		}
		if err == nil {
			err = os.Chmod(to, mode) // after the write: a set-uid bit survives no umask
		}
		if err != nil {
			t.Fatal(err)
		}
		return to
	}
	const nobody = 65534
	state, pidFile := filepath.Join(base, "state"), filepath.Join(base, "pid")
	for _, err := range []error{
		os.Chmod(base, 0o755), os.Mkdir(state, 0o700), os.Chown(state, nobody, nobody),
		os.WriteFile(pidFile, nil, 0o600), os.Chown(pidFile, nobody, nobody),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	bin := copyTo(fuseboxBin, filepath.Join(base, "fusebox"), 0o755)
	becomeRoot := copyTo(setpriv, filepath.Join(base, "setpriv"), os.ModeSetuid|0o755)
	cmd := testenv.FuseboxCmd(bin, state, []string{"HOME=" + base}, testenv.RunArgs("x", []string{"--attempts", "1", "--timeout", "1s"},
		"sh", "-c", `setsid "$1" --reuid=0 --regid=0 --clear-groups sleep 300 & echo $! > "$0"; exec sleep 5`, pidFile, becomeRoot)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Dir = base
	p := testenv.Run(t, cmd)
	b, _ := os.ReadFile(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the command's pid file %q: %v\n%s", b, err, p.Stderr)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d), the set-uid descendant: %v (it was ended after all?)\n%s", pid, err, p.Stderr)
	}
	t.Cleanup(func() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) // as root, which may
		unix.Close(fd)
	})
	if p.Code != 124 {
		t.Errorf("exit %d, want 124 (the timeout)\n%s", p.Code, p.Stderr)
	}
	// Not the timeout and the 2 s endOrphans may wait for a descendant it
	// killed: one it could not signal is not waited for.
	if p.Took > 2500*time.Millisecond {
		t.Errorf("the run took %s with its 1s timeout: it waited for a descendant it could not end", p.Took)
	}
	warning := fmt.Sprintf("could not end 1 of the command's descendants (pids [%d])", pid)
	if n := strings.Count(p.Stderr, "level=WARN"); n < 1 || strings.Count(p.Stderr, warning) != 1 {
		t.Errorf("stderr:\n%s\nwant one WARN line naming %q", p.Stderr, warning)
	}
}
