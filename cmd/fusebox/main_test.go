package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// fuseboxBin is the binary the process-level tests run, built once by
// TestMain with CGO_ENABLED=0 as users get it.
var fuseboxBin string

func TestMain(m *testing.M) { os.Exit(testenv.RunWithFusebox(m, &fuseboxBin)) }

// fb runs the fusebox binary with a clean environment: state in stateDir, no
// config unless the test adds one.
func fb(t *testing.T, stateDir string, args ...string) testenv.Proc {
	t.Helper()
	return fbEnv(t, stateDir, nil, args...)
}

func fbEnv(t *testing.T, stateDir string, env []string, args ...string) testenv.Proc {
	t.Helper()
	return testenv.Run(t, fbCmd(stateDir, env, args...))
}

func fbCmd(stateDir string, env []string, args ...string) *exec.Cmd {
	return testenv.FuseboxCmd(fuseboxBin, stateDir, env, args...)
}

// statusOf returns the --json status row of one circuit, read in-process.
func statusOf(t *testing.T, stateDir, name string) map[string]any {
	t.Helper()
	p := inproc(t, stateDir, "status", "--json", name)
	if p.Code != 0 {
		t.Fatalf("status: exit %d: %s", p.Code, p.Stderr)
	}
	return decodeRow(t, p.Stdout)
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
