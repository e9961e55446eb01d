package testenv

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// skipped holds the tests Skip and Heavy skipped, by reason, for the
// summary a TestMain prints (Exit, RunWithFusebox).
var skipped struct {
	sync.Mutex
	byReason map[string][]string
}

const heavyReason = "heavy suite: set " + HeavyVar + "=1 to run it"

func recordSkip(t testing.TB, reason string) {
	skipped.Lock()
	defer skipped.Unlock()
	if skipped.byReason == nil {
		skipped.byReason = map[string][]string{}
	}
	skipped.byReason[reason] = append(skipped.byReason[reason], t.Name())
}

// SkipSummary returns the one line saying how many tests Skip and Heavy
// skipped and why, or "" when none did.
func SkipSummary() string {
	skipped.Lock()
	defer skipped.Unlock()
	total := 0
	var parts []string
	for reason, names := range skipped.byReason {
		total += len(names)
		if len(reason) > 120 {
			reason = reason[:117] + "..."
		}
		parts = append(parts, fmt.Sprintf("%d %s", len(names), reason))
	}
	if total == 0 {
		return ""
	}
	slices.Sort(parts)
	tests := "tests"
	if total == 1 {
		tests = "test"
	}
	return fmt.Sprintf("testenv: %d %s skipped (%s); -v names them", total, tests, strings.Join(parts, "; "))
}

// Exit prints SkipSummary and exits with code: a TestMain's last call
// (os.Exit's place, or goleak.Cleanup's function).
func Exit(code int) {
	printSkipSummary()
	os.Exit(code)
}

// printSkipSummary writes the summary to stdout, where -v, -json and a
// failing package show it, and to the terminal when there is one: for a
// passing package, `go test ./...` drops everything the test binary
// printed, and a skip the user cannot see is the trouble the summary is
// for. The terminal is opened with syscall.Open, which go test's cache
// does not record as an input of the run.
func printSkipSummary() {
	line := SkipSummary()
	if line == "" {
		return
	}
	fmt.Println(line)
	if testing.Verbose() {
		return
	}
	fd, err := syscall.Open("/dev/tty", syscall.O_WRONLY|syscall.O_NOCTTY, 0)
	if err != nil {
		return // no terminal: CI, a pipe; stdout has it
	}
	defer syscall.Close(fd)
	var tty, out syscall.Stat_t
	if syscall.Fstat(fd, &tty) == nil && syscall.Fstat(1, &out) == nil && tty.Rdev == out.Rdev && out.Mode&syscall.S_IFMT == syscall.S_IFCHR {
		return // stdout is the terminal already (go test in one dir streams)
	}
	syscall.Write(fd, []byte(line+"\n"))
}
