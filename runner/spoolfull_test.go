package runner_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/runner"
)

// fullDir is a dir on a real filesystem of 128 KiB (a tmpfs, for root): full
// from the start when full is set, else it fills up under the spool.
func fullDir(t *testing.T, full bool) string {
	dir := filepath.Join(t.TempDir(), "spool")
	testenv.MountTmpfs(t, dir, "size=128k,mode=0700")
	if full {
		f, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := f.Write(chunk); errors.Is(err, syscall.ENOSPC) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// unwritableDir is a dir nobody may create a file in: read-only by its mode
// for an ordinary user, a read-only tmpfs for root, whom modes do not stop.
func unwritableDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "spool")
	if os.Geteuid() == 0 {
		testenv.MountTmpfs(t, dir, "ro,size=1m,mode=0700")
		return dir
	}
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOutputThatCannotBeSpooledPassesThroughWhole: fusebox's own trouble
// (the spool dir full or unwritable) costs neither the output nor the
// circuit: the output passes through live, whole and once, the trouble is
// reported once, no failure is counted, and the exit status is the
// command's.
func TestOutputThatCannotBeSpooledPassesThroughWhole(t *testing.T) {
	// More stdout than is held in memory (4 MiB), and more stderr (64 KiB)
	// though less than its bound (1 MiB): both spill to the dir.
	const lines = 700000
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	stderrWant := strings.Repeat("a diagnostic line of forty bytes or so\n", 5000)
	for _, dir := range []struct {
		name string
		make func(t *testing.T) string
	}{
		{"a filesystem that fills up", func(t *testing.T) string { return fullDir(t, false) }},
		{"a filesystem full from the start", func(t *testing.T) string { return fullDir(t, true) }},
		{"an unwritable dir", unwritableDir},
	} {
		for _, tc := range []struct {
			name     string
			script   string
			wantCode int
		}{
			{"stdout of a success", "seq 1 " + strconv.Itoa(lines), 0},
			{"stdout of a failure", "seq 1 " + strconv.Itoa(lines) + "; exit 3", 3},
			{"stderr of a success", `yes "a diagnostic line of forty bytes or so" | head -n 5000 >&2`, 0},
		} {
			t.Run(dir.name+": "+tc.name, func(t *testing.T) {
				p := fastPolicy()
				p.Retry.Attempts = 1
				h := newHarness(t, p)
				var trouble []error
				var stderr strings.Builder
				out, err := h.run(runner.Spec{
					Argv: []string{"sh", "-c", tc.script}, Stderr: &stderr, SpoolDir: dir.make(t),
					Trouble: func(err error) { trouble = append(trouble, err) },
				})
				switch {
				case tc.wantCode == 0 && err != nil:
					t.Errorf("Run: %v, want the command's success", err)
				case tc.wantCode != 0:
					if ee := exitError(t, err); ee.Code != tc.wantCode {
						t.Errorf("exit status %d (%s), want the command's %d", ee.Code, ee.Reason, tc.wantCode)
					}
				}
				wantOut, wantErr := want.String(), ""
				if strings.HasPrefix(tc.name, "stderr") {
					wantOut, wantErr = "", stderrWant
				}
				if out != wantOut || stderr.String() != wantErr {
					t.Errorf("stdout %d bytes, stderr %d bytes; want %d and %d: output lost or doubled", len(out), stderr.Len(), len(wantOut), len(wantErr))
				}
				if len(trouble) != 1 {
					t.Errorf("trouble reported %d times (%v), want once", len(trouble), trouble)
				}
				wantFailures := uint64(0)
				if tc.wantCode != 0 {
					wantFailures = 1 // the command's own
				}
				if c := h.counts(); c.Failures != wantFailures {
					t.Errorf("%d failures counted, want %d: fusebox's own trouble counted against the circuit", c.Failures, wantFailures)
				}
			})
		}
	}
}

func TestOutputThatCannotBePassedOnDoesNotCountAgainstTheCircuit(t *testing.T) {
	h := newHarness(t, fastPolicy())
	for range fastPolicy().Breaker.TripAfter + 1 {
		err := runner.Run(t.Context(), h.circuits, "cmd", runner.Spec{
			Argv: []string{"echo", "hello"}, Stdout: failingWriter{}, Stream: true,
		})
		if n := attempts(t, err); n != 1 {
			t.Errorf("%d attempts, want 1: a retry would meet the same trouble", n)
		}
	}
	if c := h.counts(); c.Failures != 0 {
		t.Errorf("%d failures counted, want none: the endpoint did nothing wrong", c.Failures)
	}
}
