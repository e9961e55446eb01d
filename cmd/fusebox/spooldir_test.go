package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestRunOnAFullSpoolDirPassesTheOutputThroughAndBlamesNoCircuit: with
// $TMPDIR on a full filesystem, a command's output larger than fusebox
// holds in memory passes through whole, fusebox says once that it could
// not hold it, no failure counts against the circuit, and the exit status
// is the command's.
func TestRunOnAFullSpoolDirPassesTheOutputThroughAndBlamesNoCircuit(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	testenv.MountTmpfs(t, tmp, "size=128k,mode=0700")
	state := filepath.Join(t.TempDir(), "state")
	env := []string{"TMPDIR=" + tmp}
	const lines = 700000 // 4.8 MB: more than the 4 MiB held in memory
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	for range 4 { // the default policy trips after 3 failures
		p := fbEnv(t, state, env, testenv.RunArgs("bigout", fastPolicy, "seq", "1", strconv.Itoa(lines))...)
		if p.Code != 0 || p.Stdout != want.String() {
			t.Fatalf("exit %d, stdout %d bytes; want 0 and the %d bytes seq wrote:\n%s", p.Code, len(p.Stdout), want.Len(), p.Stderr)
		}
		if countLines(p.Stderr, "level=ERROR") != 1 || !strings.Contains(p.Stderr, "cannot hold the command's output") {
			t.Errorf("stderr %q: want the one line saying fusebox could not hold the output", p.Stderr)
		}
	}
	if st := statusOf(t, state, "bigout"); st["total_failures"] != float64(0) || st["state"] != "closed" {
		t.Errorf("status %v: want closed with no failure counted", st)
	}
	p := fbEnv(t, state, env, testenv.RunArgs("bigfail", []string{"--attempts", "1"}, "sh", "-c", "seq 1 "+strconv.Itoa(lines)+"; exit 3")...)
	if p.Code != 3 || p.Stdout != want.String() {
		t.Errorf("a failing command: exit %d, stdout %d bytes; want its own 3 and its whole output", p.Code, len(p.Stdout))
	}
}
