package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// killGrace is how long a child has between SIGTERM and SIGKILL.
const killGrace = 1 * time.Second

// pipeDrain is how long fusebox reads a command's stdout after the command
// exited. A background job it started ('cmd &') may hold the pipe open for
// hours; fusebox waits for the command, not for its jobs, whose later output
// is cut off.
// The drain ends after pipeDrain of silence, or after maxDrain of a job
// that keeps writing.
const (
	pipeDrain = 50 * time.Millisecond
	maxDrain  = 2 * time.Second
)

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
	// orphans, when set, has the attempt end the command's orphaned
	// descendants (endOrphans) and hears of those it could not end.
	orphans func(error)
}

// childResult is how an attempt ended.
type childResult struct {
	code     int    // exit status as a shell reports it (128+N for signal N)
	reason   string // for the log: "exit status 3", "killed by signal 9 (SIGKILL)"
	timedOut bool
	startErr error // the command could not be started
	// own is how fusebox could not pass the command's output on, or wait
	// for it: its own trouble, which never counts against the circuit.
	own error
}

// run starts the command directly (never through a shell) in its own process
// group and waits for it. When ctx ends (attempt timeout or deadline) the
// whole group gets SIGTERM, then SIGKILL after killGrace; when the user
// interrupted the call the group gets their signal instead. Either way no grandchild
// is left behind.
func (c *child) run(ctx context.Context) childResult {
	// The child's parent-death signal fires when the thread that started
	// it ends (see procAttr): the thread is this goroutine's alone until
	// the child has been reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	stderr := &lastLine{w: c.stderr}
	p, err := startProc(c.argv, c.stdin, c.stdout, stderr)
	if err != nil {
		return startFailure(c.argv[0], err)
	}
	pgid := p.process.Pid
	// The child is waited for here, not in a goroutine of its own (a
	// goroutine started wakes another thread of the runtime's); the end of
	// ctx stops it from a callback instead.
	stopped := false
	var grace *time.Timer
	fired := make(chan struct{}) // closed once the callback has stopped the group
	unwatch := context.AfterFunc(ctx, func() {
		defer close(fired)
		sig := syscall.SIGTERM
		if s, ok := c.interrupt(); ok {
			sig = s
		}
		stopped = true
		syscall.Kill(-pgid, sig)
		grace = time.AfterFunc(killGrace, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	})
	ws, reaped, werr := p.wait(pipeDrain)
	if !unwatch() {
		<-fired // stopped and grace are set
		grace.Stop()
		syscall.Kill(-pgid, syscall.SIGKILL) // stragglers that ignored the signal
	}
	if c.orphans != nil && reaped {
		if _, left := endOrphans(); len(left) > 0 {
			c.orphans(fmt.Errorf("could not end %d of the command's descendants (pids %v): a set-uid program's, or one stuck in the kernel", len(left), left))
		}
	}
	res := exitResult(ws, reaped, werr)
	if line := stderr.line(); line != "" && (res.code != 0 || stopped) {
		if c.redact != nil {
			line = c.redact(line)
		}
		res.reason += ": " + line // what the command said about it
	}
	if res.own != nil && reaped {
		if res.code == 0 {
			res.code = 1 // its output is lost: not a success
			res.reason = "fusebox could not pass the command's output on: " + res.own.Error()
		} else {
			res.reason += " (fusebox could not pass its output on: " + res.own.Error() + ")"
		}
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

// exitResult reads how the command ended from its wait status. err is how
// it could not be waited for (not reaped), or how its output could not be
// passed on: either is fusebox's own trouble (childResult.own).
func exitResult(ws syscall.WaitStatus, reaped bool, err error) childResult {
	switch {
	case !reaped:
		return childResult{code: 1, reason: err.Error(), own: err} // no status to read
	case ws.Signaled():
		sig := ws.Signal()
		return childResult{code: 128 + int(sig), reason: fmt.Sprintf("killed by signal %d (%s)", int(sig), signalName(sig)), own: err}
	case ws.ExitStatus() != 0:
		return childResult{code: ws.ExitStatus(), reason: fmt.Sprintf("exit status %d", ws.ExitStatus()), own: err}
	}
	return childResult{own: err}
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
