package reliability

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// damages are what a crash without fsync, a full disk or a person's edit
// leave in a file.
var damages = []struct {
	name    string
	state   []byte // in place of the state file
	log     []byte // in place of the event log
	problem string // in the warning
}{
	{"truncated", []byte(`{"name":"c","state":"open","generation":3,"consec`),
		[]byte(`{"time":"2030-01-02T03:04:05Z","circuit":"c","kind":"failure"}` + "\n" + `{"time":"2030-01-02T03:`), ""},
	{"zero-filled", make([]byte, 4096), make([]byte, 4096), "zero bytes"},
	{"garbage", []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfegarbage"), []byte("\x89PNG\r\n\x1a\n\x00\x00\xff\xfegarbage"), ""},
}

// TestDamagedFilesAreMovedAside puts each damage in place of the state file,
// then of the event log, and runs a call through it: the damaged file is
// moved aside as it was, the circuit starts afresh, one warning says so, and
// the call goes through.
func TestDamagedFilesAreMovedAside(t *testing.T) {
	for _, d := range damages {
		t.Run("state file "+d.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			path := filepath.Join(state, "c.json")
			write(t, path, d.state)
			p := fb(t, state, testenv.RunArgs("c", nil, "echo", "ran")...)
			if p.Code != 0 || p.Stdout != "ran\n" {
				t.Fatalf("exit %d, stdout %q; want the command run\n%s", p.Code, p.Stdout, p.Stderr)
			}
			checkMovedAside(t, p.Stderr, path, d.state, d.problem)
			if st, err := decodeState(path); err == nil && (st.Generation != 0 || st.ConsecutiveFailures != 0) || err != nil && !os.IsNotExist(err) {
				t.Errorf("state after the run: %+v, %v; want a fresh one (or none: a success is only counted)", st, err)
			}
			if c, err := decodeCounts(state, "c"); err != nil || c.Successes != 1 || c.Failures != 0 {
				t.Errorf("counts after the run: %+v, %v; want this run's success", c, err)
			}
		})
		t.Run("event log "+d.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			path := filepath.Join(state, "events", "c.jsonl")
			write(t, path, d.log)
			// Fails once (an event to append), then succeeds.
			flag := filepath.Join(t.TempDir(), "flag")
			script := fmt.Sprintf(`if [ -e %[1]s ]; then echo ran; else touch %[1]s; exit 1; fi`, flag)
			p := fb(t, state, testenv.RunArgs("c", []string{"--backoff", "1ms"}, "sh", "-c", script)...)
			if p.Code != 0 || p.Stdout != "ran\n" {
				t.Fatalf("exit %d, stdout %q; want the call to go through\n%s", p.Code, p.Stdout, p.Stderr)
			}
			checkMovedAside(t, p.Stderr, path, d.log, d.problem)
			events, err := decodeEvents(path)
			if err != nil || len(events) != 1 || events[0].Reason != "exit status 1" {
				t.Errorf("event log after the run: %+v, %v; want a fresh one holding this run's failure", events, err)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkMovedAside checks that the damaged file at path was moved aside with
// its content, and that one warning named it, the problem and where it went.
func checkMovedAside(t *testing.T, stderr, path string, content []byte, problem string) {
	t.Helper()
	moved, _ := filepath.Glob(path + ".corrupt-*")
	if len(moved) != 1 {
		t.Fatalf("moved aside: %v, want one %s.corrupt-TIME", moved, path)
	}
	if b, _ := os.ReadFile(moved[0]); !bytes.Equal(b, content) {
		t.Errorf("%s holds %q, want the damaged content", moved[0], b)
	}
	w := storeWarnings(stderr)
	if len(w) != 1 {
		t.Fatalf("want one warning, got:\n%s", stderr)
	}
	for _, s := range []string{"moved a damaged file aside", path, moved[0], problem} {
		if !strings.Contains(w[0], s) {
			t.Errorf("warning %q does not say %q", w[0], s)
		}
	}
}

// TestEventLogWithWholeGarbageLines: a log whose damage ends in a newline is
// not torn, so it is not moved aside: new events go after it, whole, and
// reading skips the lines that do not decode. The next automatic gc (at most
// hourly) drops those lines, logging it at INFO.
func TestEventLogWithWholeGarbageLines(t *testing.T) {
	garbage := []byte("not json\n\x00\x00\x00\n")
	for _, gcDue := range []bool{false, true} {
		t.Run(fmt.Sprintf("gc due %v", gcDue), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			path := filepath.Join(state, "events", "c.jsonl")
			write(t, path, garbage)
			if !gcDue {
				write(t, filepath.Join(state, ".gc"), nil) // gc ran just now
			}
			p := fb(t, state, testenv.RunArgs("c", []string{"-v", "--attempts", "1"}, failing...)...) // -v: gc's INFO line
			if p.Code != 1 || p.Stdout != "ran\n" || len(storeWarnings(p.Stderr)) != 0 {
				t.Fatalf("exit %d, stdout %q; want the command run and no warning about the store\n%s", p.Code, p.Stdout, p.Stderr)
			}
			b, _ := os.ReadFile(path)
			rest, kept := bytes.CutPrefix(b, garbage)
			if kept == gcDue {
				t.Errorf("log %q: garbage kept %v, want %v", b, kept, !gcDue)
			}
			if events, err := decodeEvents(writeTemp(t, rest)); err != nil || len(events) != 1 {
				t.Errorf("appended %q: %v; want one whole event", rest, err)
			}
			if gcDue && !strings.Contains(p.Stderr, `level=INFO msg="automatic gc removed unused state"`) {
				t.Errorf("gc dropped the garbage lines without a word:\n%s", p.Stderr)
			}
			if _, corrupt := leftovers(t, state); len(corrupt) > 0 {
				t.Errorf("moved aside: %v", corrupt)
			}
		})
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStateFileCannotHoldACircuitOpenForCenturies: a state file that
// decodes but holds nonsense (a person's edit, a bit flip) must not wedge
// the circuit: at worst it is open for its own period, never for centuries.
// FuzzStateJSON in the root package found this one.
func TestStateFileCannotHoldACircuitOpenForCenturies(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	write(t, filepath.Join(state, "c.json"), []byte(`{"name":"c","state":"open","open_period":"-1s"}`))
	p := fb(t, state, testenv.RunArgs("c", nil, "echo", "ran")...)
	if p.Code != 0 || p.Stdout != "ran\n" {
		t.Errorf("exit %d, stdout %q; want the call to go through (the period is over)\n%s", p.Code, p.Stdout, p.Stderr)
	}
}
