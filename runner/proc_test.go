package runner_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/runner"
)

// What os/exec did for Run before proc.go replaced it, kept: how stdin
// reaches the command, how its output is copied, and what a job it leaves
// behind may hold up.

func TestStdinThatIsNoFileIsFedThroughAPipe(t *testing.T) {
	p := fastPolicy()
	p.Retry.Attempts = 1
	out, err := newHarness(t, p).run(runner.Spec{Argv: []string{"cat"}, Stdin: strings.NewReader("fed\n")})
	if err != nil || out != "fed\n" {
		t.Errorf("stdout %q, error %v; want %q and none", out, err, "fed\n")
	}
}

func TestNoStdinReadsNothing(t *testing.T) {
	out, err := newHarness(t, fastPolicy()).run(runner.Spec{Argv: []string{"cat"}})
	if err != nil || out != "" {
		t.Errorf("stdout %q, error %v; want nothing and no error", out, err)
	}
}

func TestACommandThatLeavesMostOfItsStdinUnreadSucceeds(t *testing.T) {
	big := bytes.NewReader(make([]byte, 4<<20)) // far more than a pipe holds
	_, err := newHarness(t, fastPolicy()).run(runner.Spec{Argv: []string{"true"}, Stdin: big})
	if err != nil {
		t.Errorf("Run: %v, want a success: the unread rest is no failure", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStdoutThatCannotBeWrittenFailsTheAttemptSayingWhy(t *testing.T) {
	p := fastPolicy()
	p.Retry.Attempts = 1
	err := runner.Run(t.Context(), newHarness(t, p).circuits, "cmd", runner.Spec{
		Argv: []string{"echo", "hello"}, Stdout: failingWriter{}, Stream: true,
	})
	if ee := exitError(t, err); ee.Code != 1 || !strings.Contains(ee.Reason, "disk full") {
		t.Errorf("got %d %q, want exit status 1 and the write's error", ee.Code, ee.Reason)
	}
}

func TestABackgroundJobHoldingStdoutDoesNotHoldTheCall(t *testing.T) {
	// The job keeps the stdout pipe open for five minutes; the call ends
	// once the command has exited and the pipe has drained what it wrote.
	done := make(chan struct{})
	var out string
	var err error
	go func() {
		defer close(done)
		out, err = newHarness(t, fastPolicy()).run(runner.Spec{Argv: []string{"sh", "-c", `sleep 300 & echo "job $!"`}})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // only keeps a broken drain from hanging the suite
		t.Fatal("Run still waiting a minute after the command exited: the job's pipe held it")
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "job ")))
	if perr != nil {
		t.Fatalf("stdout %q: want the job's pid, written before the command exited", out)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}
