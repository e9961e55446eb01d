package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// probeRace starts n callers at once on a half-open circuit. Caller i runs
// the shell command it is handed (through run, which returns its exit
// status); the command marks that it ran, then waits for a release file that
// is created only once every caller has run its command or exited, so that
// however slow the machine, the others find the probe held. It checks that
// exactly one command ran and succeeded and the other n-1 callers skipped
// (exit 75).
func probeRace(t *testing.T, n int, run func(i int, command string) int) {
	t.Helper()
	ran := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	var wg sync.WaitGroup
	var exited atomic.Int32
	codes := make([]int, n)
	for i := range codes {
		wg.Go(func() {
			codes[i] = run(i, fmt.Sprintf("touch %s/%d; while [ ! -e %s ]; do sleep 0.01; done", ran, i, release))
			exited.Add(1)
		})
	}
	// Twenty processes starting at once on a busy machine may take a
	// while: the wait ends early only when no caller has decided for a
	// minute, and then the check below says what happened.
	decided := func() int {
		entries, _ := os.ReadDir(ran)
		return int(exited.Load()) + len(entries)
	}
	for last, since := -1, time.Now(); decided() < n && time.Since(since) < time.Minute; {
		if d := decided(); d > last {
			last, since = d, time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	entries, _ := os.ReadDir(ran)
	zeros, skips := 0, 0
	for _, c := range codes {
		switch c {
		case 0:
			zeros++
		case exitOpen:
			skips++
		}
	}
	if len(entries) != 1 || zeros != 1 || skips != n-1 {
		t.Fatalf("%d commands ran, exits %v; want exactly one probe (0) and %d skips (75)", len(entries), codes, n-1)
	}
}
