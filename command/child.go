package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// killGrace is how long a child has between SIGTERM and SIGKILL.
const killGrace = 1 * time.Second

// pipeDrain is how long fusebox reads a command's stdout after the command
// exited. A background job it started ('cmd &') may hold the pipe open for
// hours; fusebox waits for the command, not for its jobs, whose later output
// is cut off.
const pipeDrain = 50 * time.Millisecond

// child is one attempt of a wrapped command.
type child struct {
	argv   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// interrupt returns the signal the user sent, once they have; never nil.
	interrupt Interrupt
	// redact hides secrets in the stderr line a failure's reason quotes;
	// nil: none.
	redact func(string) string
}

// childResult is how an attempt ended.
type childResult struct {
	code     int    // exit status as a shell reports it (128+N for signal N)
	reason   string // for the log: "exit status 3", "killed by signal 9 (SIGKILL)"
	timedOut bool
	startErr error // the command could not be started
}

// run starts the command directly (never through a shell) in its own process
// group and waits for it. When ctx ends (attempt timeout or deadline) the
// whole group gets SIGTERM, then SIGKILL after killGrace; when the user
// interrupted the call the group gets their signal instead. Either way no grandchild
// is left behind.
func (c *child) run(ctx context.Context) childResult {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	stderr := &lastLine{w: c.stderr}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = pipeDrain
	if err := cmd.Start(); err != nil {
		return startFailure(c.argv[0], err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var err error
	stopped := false
	select {
	case err = <-done:
	case <-ctx.Done():
		stopped = true
		sig := syscall.SIGTERM
		if s, ok := c.interrupt(); ok {
			sig = s
		}
		syscall.Kill(-pgid, sig)
		select {
		case err = <-done:
		case <-time.After(killGrace):
			syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
	}
	if stopped {
		syscall.Kill(-pgid, syscall.SIGKILL) // stragglers that ignored the signal
	}
	res := exitResult(cmd.ProcessState, err)
	if line := stderr.line(); line != "" && (res.code != 0 || stopped) {
		if c.redact != nil {
			line = c.redact(line)
		}
		res.reason += ": " + line // what the command said about it
	}
	if stopped && ctx.Err() == context.DeadlineExceeded {
		if _, user := c.interrupt(); !user {
			res.timedOut = true
			if res.reason == "" {
				res.reason = "the command was still running" // it exited 0 just as time ran out
			}
		}
	}
	return res
}

func startFailure(name string, err error) childResult {
	res := childResult{code: ExitNotExec, startErr: err, reason: err.Error()}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		res.code = ExitNotFound
		res.reason = fmt.Sprintf("command not found: %s", name)
	}
	return res
}

// exitResult reads how the command ended from its process state. err is
// Wait's: exec.ErrWaitDelay only says a background job kept stdout open.
func exitResult(ps *os.ProcessState, err error) childResult {
	if ps == nil {
		return childResult{code: 1, reason: err.Error()}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		sig := ws.Signal()
		return childResult{code: 128 + int(sig), reason: fmt.Sprintf("killed by signal %d (%s)", int(sig), signalName(sig))}
	case ps.ExitCode() != 0:
		return childResult{code: ps.ExitCode(), reason: fmt.Sprintf("exit status %d", ps.ExitCode())}
	case err != nil && !errors.Is(err, exec.ErrWaitDelay):
		return childResult{code: 1, reason: err.Error()} // stdout could not be copied
	}
	return childResult{}
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return sig.String()
}
