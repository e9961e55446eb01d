package runner_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/runner"
)

func TestATimedOutAttemptIsRetriedAndTheLastExits124(t *testing.T) {
	p := fastPolicy()
	p.Retry.Attempts = 2
	p.Retry.Timeout = 50 * time.Millisecond // however slow the machine, sleep 60 outlasts it
	_, err := newHarness(t, p).run(runner.Spec{Argv: []string{"sleep", "60"}})
	if ee := exitError(t, err); ee.Code != runner.ExitTimeout {
		t.Errorf("exit status %d (%s), want %d", ee.Code, ee.Reason, runner.ExitTimeout)
	}
	if n := attempts(t, err); n != 2 {
		t.Errorf("%d attempts, want 2: a timeout is worth retrying", n)
	}
}

func TestATimeoutKillsAGrandchildThatIgnoresSIGTERM(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		testenv.Skip(t, "no /proc to count a process group's members in: %v", err)
	}
	p := fastPolicy()
	p.Retry.Attempts = 1
	h := newHarness(t, p)
	out := newLines()
	script := `echo group $$; sh -c 'trap "" TERM; echo grandchild $$; exec sleep 300' & wait`
	ctx := newCuedDeadline()
	done := make(chan error, 1)
	go func() {
		done <- runner.Run(ctx, h.circuits, "cmd", runner.Spec{Argv: []string{"sh", "-c", script}, Stdout: out, Stream: true})
	}()
	pgid := field(t, out.next(t, "group "))
	grandchild := field(t, out.next(t, "grandchild "))
	exited := pidfd(t, grandchild)
	if n := groupMembers(t, pgid); n < 2 {
		t.Fatalf("%d live processes in the command's group, want the command and its grandchild", n)
	}

	ctx.pass()
	err := <-done
	if ee := exitError(t, err); ee.Code != runner.ExitTimeout {
		t.Errorf("exit status %d (%s), want %d", ee.Code, ee.Reason, runner.ExitTimeout)
	}
	exited()
	if n := groupMembers(t, pgid); n != 0 {
		t.Errorf("%d processes of the command's group outlived the call, want none", n)
	}
}

// cuedDeadline is a context whose deadline passes when the test calls pass:
// for the attempt it is the same as its timeout, without racing a timer
// against the start of the processes the test needs to see first.
type cuedDeadline struct {
	context.Context // no deadline and no values of its own
	done            chan struct{}
	once            sync.Once
}

func newCuedDeadline() *cuedDeadline {
	return &cuedDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (c *cuedDeadline) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *cuedDeadline) Done() <-chan struct{} { return c.done }
func (c *cuedDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// field returns the number a line like "group 1234" ends with.
func field(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	n, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		t.Fatalf("no process id in %q", line)
	}
	return n
}

// groupMembers counts the live processes (zombies aside) of process group
// pgid, from /proc.
func groupMembers(t *testing.T, pgid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since ReadDir
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(rest) < 3 || rest[0] == "Z" || rest[0] == "X" { // zombie or dead
			continue
		}
		if g, _ := strconv.Atoi(rest[2]); g == pgid {
			n++
		}
	}
	return n
}
