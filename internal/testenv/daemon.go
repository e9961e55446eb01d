package testenv

import (
	"bufio"
	"fmt"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// Daemon is a `fusebox serve` process a test started, listening on a
// loopback port it chose.
type Daemon struct {
	Cmd    *exec.Cmd
	Addr   string  // host:port it listens on
	Stderr *Buffer // everything it logged
	exited chan struct{}
	code   int
}

var listenRE = regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`)

// StartDaemon starts cmd, a `fusebox serve --listen 127.0.0.1:0 ...` (as
// FuseboxCmd makes it, its stderr not yet set), and returns once the daemon
// has logged where it listens. It is killed, by its PID, when the test ends
// if it is still running.
func StartDaemon(t testing.TB, cmd *exec.Cmd) *Daemon {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Cmd: cmd, Stderr: &Buffer{}, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(d.Stderr, line)
			if m := listenRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		d.code = cmd.ProcessState.ExitCode()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = cmd.Process.Kill()
			<-d.exited
		}
	})
	select {
	case d.Addr = <-found:
	case <-d.exited:
		t.Fatalf("fusebox serve exited with %d: %s", d.code, d.Stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("fusebox serve did not say where it listens within 60s (timed out): %s", d.Stderr)
	}
	return d
}

// Exited reports whether the daemon has exited, and its exit status.
func (d *Daemon) Exited() (bool, int) {
	select {
	case <-d.exited:
		return true, d.code
	default:
		return false, 0
	}
}
