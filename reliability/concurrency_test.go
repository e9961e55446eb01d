package reliability

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestConcurrentProcesses starts n fusebox processes whose commands all
// block on one pipe, so that every process is past its start-up and waiting
// to record its outcome when the pipe closes: they all go for the state
// update at the same instant. Half the commands fail (exit 3) and half
// succeed. No update may be lost, no error surfaced, no lock wait time out.
// The attempts' timeout is long: a command's attempt lasts until the last
// of n processes has started, which a busy machine may take a minute for,
// and a timed-out attempt is a bound missed, not the lost update this
// test looks for. A failure says which it saw.
func TestConcurrentProcesses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		processes int
		circuits  int
	}{
		{"200 processes on one circuit", 200, 1},
		{"50 processes on 50 circuits", 50, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.processes
			if testing.Short() || !testenv.HeavyOn() {
				n = min(n, 50) // the quick run's and -short's size
			}
			runConcurrently(t, n, tc.circuits)
		})
	}
}

func runConcurrently(t *testing.T, n, circuits int) {
	state := filepath.Join(t.TempDir(), "state")
	ready := t.TempDir()
	barrier, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer barrier.Close()
	defer release.Close()
	policy := []string{"--attempts", "1", "--trip-after", "100000", "--timeout", "30m", "--deadline", "30m"}
	circuit := func(i int) string { return fmt.Sprintf("shared-%d", i%circuits) }
	fails := func(i int) bool { return i%2 == 1 }

	cmds := make([]*exec.Cmd, n)
	stderr := make([]bytes.Buffer, n)
	for i := range cmds {
		// The command says it is ready, then waits for the barrier to close.
		script := `touch "$1"; cat; exit $2`
		code := "0"
		if fails(i) {
			code = "3"
		}
		cmd := fbCmd(state, nil, testenv.RunArgs(circuit(i), policy, "sh", "-c", script, "sh", filepath.Join(ready, fmt.Sprint(i)), code)...)
		cmd.Stdin, cmd.Stderr = barrier, &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	waitProgress(t, "commands started", n, time.Minute, func() int {
		entries, _ := os.ReadDir(ready)
		return len(entries)
	})
	release.Close()
	start := time.Now()
	var slowest time.Duration
	exits := make([]int, n)
	unrecorded := make([]bool, n) // gave up on the store: ran unprotected, recorded nothing
	lockWaits := 0
	for i, cmd := range cmds {
		cmd.Wait()
		slowest = max(slowest, time.Since(start))
		want := 0
		if fails(i) {
			want = 3
		}
		p := testenv.Finished(cmd, 0)
		exits[i] = p.Code
		if p.Code != want {
			t.Errorf("process %d: exit %d (%s), want %d:\n%s", i, p.Code, testenv.ExitMeaning(p.Code), want, stderr[i].String())
		}
		lines := logLines(stderr[i].String())
		unrecorded[i] = strings.Contains(stderr[i].String(), "state store unusable")
		switch {
		case unrecorded[i] && strings.Contains(stderr[i].String(), `err="lock `+circuit(i)+": "+fusebox.ErrLockTimeout.Error()):
			lockWaits++ // reported once, below
		case !fails(i) && len(lines) > 0:
			t.Errorf("process %d succeeded but logged:\n%s", i, stderr[i].String())
		case fails(i) && (len(lines) != 1 || !strings.Contains(lines[0], `msg=failed `)):
			t.Errorf("process %d: want only its one failure line logged, got:\n%s", i, stderr[i].String())
		}
	}
	t.Logf("%d processes on %d circuit(s), all waiting on one pipe: the last one exited %s after the pipe closed",
		n, circuits, slowest.Round(time.Millisecond))
	if lockWaits > 0 {
		t.Errorf("%d of %d processes gave up waiting for the circuit's lock (the store's lock timeout) and ran unprotected: "+
			"not a lost update, a queue longer than this machine works through in that time", lockWaits, n)
	}

	for c := range circuits {
		name := circuit(c)
		// What the processes' exits say they recorded: a timed-out
		// attempt (124) is a failure too. One that gave up on the store
		// recorded no event; its outcome is counted all the same when it
		// gave up on the lock after its command ran (a count without its
		// event, never an event without its count).
		var wantOK, wantFailed, mayHaveCounted, mayHaveCountedOK uint64
		for i := range n {
			if circuit(i) != name {
				continue
			}
			switch {
			case unrecorded[i] && (exits[i] == 3 || exits[i] == 124):
				mayHaveCounted++
			case unrecorded[i] && exits[i] == 0:
				mayHaveCountedOK++
			case unrecorded[i]:
			case exits[i] == 0:
				wantOK++
			case exits[i] == 3 || exits[i] == 124:
				wantFailed++
			}
		}
		c, err := decodeCounts(state, name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Successes < wantOK || c.Successes > wantOK+mayHaveCountedOK || c.Failures < wantFailed || c.Failures > wantFailed+mayHaveCounted {
			t.Errorf("%s: %d successes and %d failures counted, where the processes' exits recorded %d and %d (and %d and %d more that may be counted): lost updates",
				name, c.Successes, c.Failures, wantOK, wantFailed, mayHaveCountedOK, mayHaveCounted)
		}
		events, err := decodeEvents(filepath.Join(state, "events", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		failures := 0
		for _, e := range events {
			if e.Kind == breaker.EventFailure {
				failures++
			}
		}
		if uint64(failures) != wantFailed {
			t.Errorf("%s: %d failure events, want %d", name, failures, wantFailed)
		}
	}
	if temps, corrupt := leftovers(t, state); len(temps)+len(corrupt) > 0 {
		t.Errorf("left behind: %v %v", temps, corrupt)
	}
}
