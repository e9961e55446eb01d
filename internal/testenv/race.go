package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// raceExit is the status a race-built child exits with once it has
// reported a data race (the race runtime's default, set explicitly).
const raceExit = 66

// raceLogs is the dir race-built children write their reports into (as
// race.PID), set by BuildFusebox in a -race test binary; "" otherwise.
var raceLogs string

// raceEnv returns the GORACE setting for a child: reports into raceLogs,
// one file per process, so that the harness finds the report of the
// process it ran whatever the test did with its stderr; and no sleep at
// exit. The race runtime sleeps a second before a process exits
// (atexit_sleep_ms=1000), so that goroutines still running may report:
// a second on each of the thousands of processes the tests start
// (reliability's TestSharedDirDefendsItself: 80 s, 2.6 s without it), for
// races a fusebox built without -race could not have, as it exits at once.
func raceEnv() string {
	return fmt.Sprintf("GORACE=log_path=%s exitcode=%d atexit_sleep_ms=0", filepath.Join(raceLogs, "race"), raceExit)
}

// CheckRace fails t when the child process pid, built with -race, reported
// a data race. Run and StartDaemon call it for the processes they run; a
// test that starts a fusebox child another way calls it once the child
// has exited. It is a no-op in a test binary built without -race.
func CheckRace(t testing.TB, pid int) {
	t.Helper()
	if report := takeRaceReport(pid); report != "" {
		t.Errorf("DATA RACE in fusebox child pid %d (a bug in fusebox, not a slow machine):\n%s", pid, report)
	}
}

// takeRaceReport returns and removes the race report of pid, or "".
func takeRaceReport(pid int) string {
	if raceLogs == "" {
		return ""
	}
	path := filepath.Join(raceLogs, "race."+strconv.Itoa(pid))
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	os.Remove(path)
	return string(b)
}

// unclaimedRaces returns the race reports no test took: those of children
// started outside the harness (a grandchild, a process a test waited for
// itself). RunWithFusebox fails the package with them.
func unclaimedRaces() string {
	if raceLogs == "" {
		return ""
	}
	paths, _ := filepath.Glob(filepath.Join(raceLogs, "race.*"))
	var b strings.Builder
	for _, p := range paths {
		report, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "DATA RACE in fusebox child pid %s, started outside the harness:\n%s\n",
			strings.TrimPrefix(filepath.Ext(p), "."), report)
	}
	return b.String()
}
