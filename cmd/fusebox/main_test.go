package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fuseboxBin is the binary the process-level tests run, built once by
// TestMain with CGO_ENABLED=0 as users get it.
var fuseboxBin string

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFusebox(m, &fuseboxBin)) }

// proc is one finished fusebox process.
type proc struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// fb runs the fusebox binary with a clean environment: state in stateDir, no
// config unless the test adds one.
func fb(t *testing.T, stateDir string, args ...string) proc {
	t.Helper()
	return fbEnv(t, stateDir, nil, args...)
}

func fbEnv(t *testing.T, stateDir string, env []string, args ...string) proc {
	t.Helper()
	return runProc(t, fbCmd(stateDir, env, args...))
}

// runProc runs cmd to its end and returns its exit status and output.
func runProc(t *testing.T, cmd *exec.Cmd) proc {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := proc{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		p.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return p
}

func fbCmd(stateDir string, env []string, args ...string) *exec.Cmd {
	return testenv.FuseboxCmd(fuseboxBin, stateDir, env, args...)
}

// statusOf returns the --json status row of one circuit, read in-process.
func statusOf(t *testing.T, stateDir, name string) map[string]any {
	t.Helper()
	p := inproc(t, stateDir, "status", "--json", name)
	if p.code != 0 {
		t.Fatalf("status: exit %d: %s", p.code, p.stderr)
	}
	return decodeRow(t, p.stdout)
}

// decodeRow returns the one row of a status --json document.
func decodeRow(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status --json: %v: %q", err, stdout)
	}
	return rows[0]
}

func countLines(s, substr string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds. The minute is a guard for a test that
// is failing anyway, not a speed target: a busy machine may take seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		if ctx.Err() != nil {
			t.Fatalf("%s: not after a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
		runtime.Gosched()
	}
}
