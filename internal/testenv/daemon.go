package testenv

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// Daemon is a `fusebox serve` process a test started, listening on a
// loopback port it chose. Its methods are safe for concurrent use.
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
// if it is still running; a data race it reported then fails the test
// (CheckRace).
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
		CheckRace(t, cmd.Process.Pid)
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

// Get returns the status, header and body of GET path, failing the test
// when there is no answer.
func (d *Daemon) Get(t testing.TB, path string) (int, http.Header, string) {
	t.Helper()
	return d.request(t, http.MethodGet, path)
}

// Post is Get for a POST of path with no body (the API's trip and reset).
func (d *Daemon) Post(t testing.TB, path string) (int, http.Header, string) {
	t.Helper()
	return d.request(t, http.MethodPost, path)
}

func (d *Daemon) request(t testing.TB, method, path string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.Addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// Signal sends s to the daemon, by its PID.
func (d *Daemon) Signal(t testing.TB, s os.Signal) {
	t.Helper()
	if err := d.Cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// Wait waits for the daemon to exit and returns its exit status. The
// minute is a guard for a daemon that does not stop, not a speed target.
func (d *Daemon) Wait(t testing.TB) int {
	t.Helper()
	select {
	case <-d.exited:
		return d.code
	case <-time.After(time.Minute):
		t.Fatalf("fusebox serve did not exit within a minute (timed out): %s", d.Stderr)
		return 0
	}
}

// Stop asks the daemon to stop (SIGTERM, by its PID) and waits for it to
// exit; it returns what the daemon logged.
func (d *Daemon) Stop(t testing.TB) string {
	t.Helper()
	_ = d.Cmd.Process.Signal(syscall.SIGTERM) // fails only when it has exited already
	d.Wait(t)
	return d.Stderr.String()
}
