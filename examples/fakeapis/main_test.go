package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestStartSaysReadyAndStopLeavesNothing runs the steps of docs/call.md: start
// returns once the stand-in answers, a second start on the same port says
// why it cannot, and stop ends the server, leaving no process behind.
func TestStartSaysReadyAndStopLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fakeapis")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	pidFile := filepath.Join(dir, "fakeapis.pid")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	out, err := run("start", "-addr", "127.0.0.1:0", "-pid-file", pidFile)
	m := regexp.MustCompile(`^ready on (http://127\.0\.0\.1:\d+) \(pid (\d+)\)`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("start: %v %q", err, out)
	}
	pid, _ := strconv.Atoi(m[2])
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) }) // if stop fails
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(m[1] + "/weather")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the ready stand-in does not answer: %v %v", resp, err)
	}
	resp.Body.Close()

	if out, err := run("start", "-pid-file", pidFile); err == nil || !strings.Contains(out, "already running") {
		t.Errorf("second start with the same pid file: %v %q", err, out)
	}
	addr := strings.TrimPrefix(m[1], "http://")
	if out, err := run("start", "-addr", addr, "-pid-file", filepath.Join(dir, "other.pid")); err == nil || !strings.Contains(out, "address already in use") {
		t.Errorf("start on a port in use: %v %q, want why", err, out)
	}

	if out, err := run("stop", "-pid-file", pidFile); err != nil || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %v %q", err, out)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Error("the server still runs after stop")
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("stop left the pid file")
	}
}
