package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what would fail a test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// A data race in a race-built child fails the test that ran it through
// the harness, and only that process's report is taken.
func TestARaceInAChildFailsTheTestThatRanIt(t *testing.T) {
	if !RaceBuild {
		t.Skip("the race-built children are the -race run's; this checks the harness there")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "racy")
	if out, err := exec.Command("go", "build", "-race", "-o", bin, "./testdata/racy").CombinedOutput(); err != nil {
		t.Fatalf("build the racy child: %v\n%s", err, out)
	}
	saved := raceLogs
	raceLogs = filepath.Join(dir, "races")
	t.Cleanup(func() { raceLogs = saved })
	if err := os.Mkdir(raceLogs, 0o700); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin)
	cmd.Env = []string{raceEnv()}
	r := &recorder{TB: t}
	p := Run(r, cmd)
	if p.Code != raceExit {
		t.Errorf("the racy child exited %d, want the race runtime's %d", p.Code, raceExit)
	}
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "DATA RACE") || !strings.Contains(r.errors[0], "main.main") {
		t.Fatalf("the harness reported %q, want one DATA RACE failure with the child's report", r.errors)
	}
	if left := unclaimedRaces(); left != "" {
		t.Errorf("the report Run took is still there for the package to fail on:\n%s", left)
	}

	// One started outside the harness is left for RunWithFusebox.
	cmd = exec.Command(bin)
	cmd.Env = []string{raceEnv()}
	cmd.Run()
	if left := unclaimedRaces(); !strings.Contains(left, "started outside the harness") {
		t.Errorf("a race of a child no test checked was not kept for the package: %q", left)
	}
}
