package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is one finished process.
type Proc struct {
	Code   int            // exit status; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it, or 0
	Stdout string
	Stderr string
	Took   time.Duration
	// MaxRSS is rusage's peak resident set, in bytes. On Linux it is the
	// largest of the process's own, its waited-for children's, and the
	// resident set of the process that started it at the time of the exec:
	// os/exec starts children with CLONE_VM|CLONE_VFORK, so exec records the
	// parent's high-water mark as the child's. An upper bound only; HWM is
	// the process's own (when watched).
	MaxRSS int64
	HWM    int64         // the process's own peak resident set (VmHWM), in bytes; 0 when not watched
	CPU    time.Duration // user and system time: the work it did, whatever else the machine ran
}

// Run runs cmd to its end, capturing its stdout and stderr, and describes
// it. A command that could not be run at all fails the test, and so does a
// data race a race-built child reported (CheckRace).
func Run(t testing.TB, cmd *exec.Cmd) Proc {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := Finished(cmd, time.Since(start))
	p.Stdout, p.Stderr = out.String(), errb.String()
	if err != nil && cmd.ProcessState == nil {
		as := ""
		if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
			as = fmt.Sprintf(" as uid %d", a.Credential.Uid)
		}
		t.Fatalf("%q%s: %v", cmd.Args, as, err)
	}
	CheckRace(t, cmd.Process.Pid)
	return p
}

// Finished describes cmd once it has been waited for, took after it
// started; a cmd that never ran has Code -1. Stdout and Stderr are left
// for the caller, who chose where they went.
func Finished(cmd *exec.Cmd, took time.Duration) Proc {
	p := Proc{Code: -1, Took: took}
	ps := cmd.ProcessState
	if ps == nil {
		return p
	}
	p.Code = ps.ExitCode()
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.Signal = ws.Signal()
	}
	p.CPU = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		p.MaxRSS = int64(ru.Maxrss) * 1024 // kilobytes on Linux (an int32 on 32-bit ARM)
	}
	return p
}

// RunWatched runs cmd, polling its VmHWM (the peak resident set of its own
// address space, which exec starts afresh) every millisecond until it
// exits, and hands its pid to started (when not nil) once it runs. The
// peak is kept until exit, so the last reading misses only growth in the
// last millisecond of the process's life. The error is Start's.
func RunWatched(cmd *exec.Cmd, started func(pid int)) (Proc, error) {
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Proc{}, err
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		for {
			hwm = max(hwm, StatusField(cmd.Process.Pid, "VmHWM"))
			select {
			case <-stop:
				peak <- hwm
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	_ = cmd.Wait()
	close(stop)
	p := Finished(cmd, time.Since(start))
	p.HWM = <-peak
	return p, nil
}

// StatusField returns a kB field of /proc/PID/status (VmHWM, VmRSS) in
// bytes, or 0 when there is none to read.
func StatusField(pid int, name string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, name+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// ExitMeaning says what a fusebox exit status means, for a failure message.
func ExitMeaning(code int) string {
	switch code {
	case -1:
		return "killed by a signal"
	case 124:
		return "the attempt timed out: a bound the machine missed, not a lost update"
	case 75:
		return "skipped: the circuit was open"
	}
	return "the command's or fusebox's own status"
}

// RunArgs returns the arguments of `fusebox run [policy...] name --
// command...`.
func RunArgs(name string, policy []string, command ...string) []string {
	args := append([]string{"run"}, policy...)
	args = append(args, name, "--")
	return append(args, command...)
}

// WaitFor polls cond until it holds. The minute is a guard for a test that
// is failing anyway, not a speed target: a busy machine may take seconds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("timed out after a minute waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
		runtime.Gosched()
	}
}
