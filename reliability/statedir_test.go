package reliability

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// failing is a command that prints and fails: recorded, three runs of it
// with --trip-after 1 would open the circuit, so a run that still runs it
// shows nothing was recorded.
var failing = []string{"sh", "-c", "echo ran; exit 1"}

var tripAtOnce = []string{"--attempts", "1", "--trip-after", "1"}

// storeWarnings returns the warnings about the state store: every WARN or
// ERROR line except the command's own failure.
func storeWarnings(stderr string) []string {
	var out []string
	for _, l := range warnings(stderr) {
		if !strings.Contains(l, `msg="attempt failed"`) && !strings.Contains(l, `msg=failed `) {
			out = append(out, l)
		}
	}
	return out
}

// TestUnusableStateDirFailsOpen: a state dir that cannot be written still
// lets every call through, each with one warning that says why.
func TestUnusableStateDirFailsOpen(t *testing.T) {
	t.Run("read-only tmpfs", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state")
		testenv.MountTmpfs(t, state, "ro,size=1m,mode=0700")
		checkRunsUnprotected(t, state, "read-only file system")
		if got := tree(t, state); len(got) > 0 {
			t.Errorf("wrote %v to a read-only dir", got)
		}
	})
	t.Run("missing, under a read-only tmpfs", func(t *testing.T) {
		ro := filepath.Join(t.TempDir(), "ro")
		testenv.MountTmpfs(t, ro, "ro,size=1m,mode=0700")
		checkRunsUnprotected(t, filepath.Join(ro, "state"), "create state dir")
	})
	t.Run("read-only after the circuit was stored", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state")
		testenv.MountTmpfs(t, state, "size=1m,mode=0700")
		if p := fb(t, state, testenv.RunArgs("c", nil, "true")...); p.Code != 0 {
			t.Fatalf("exit %d: %s", p.Code, p.Stderr)
		}
		before := readAll(t, state)
		if out, err := exec.Command("mount", "-o", "remount,ro", state).CombinedOutput(); err != nil {
			t.Fatalf("remount ro: %v %s", err, out)
		}
		checkRunsUnprotected(t, state, "read-only file system")
		if after := readAll(t, state); !equalFiles(before, after) {
			t.Errorf("files changed on a read-only dir")
		}
	})
	t.Run("full tmpfs", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state")
		testenv.MountTmpfs(t, state, "size=64k,mode=0700")
		if p := fb(t, state, testenv.RunArgs("c", nil, "true")...); p.Code != 0 {
			t.Fatalf("exit %d: %s", p.Code, p.Stderr)
		}
		fill(t, filepath.Join(state, "filler"))
		before := readAll(t, state)
		checkRunsUnprotected(t, state, "no space left on device")
		after := readAll(t, state)
		for name, b := range after {
			if _, ok := before[name]; !ok && len(b) == 0 && (strings.HasPrefix(name, ".locks/") || strings.HasPrefix(name, ".counts/")) {
				delete(after, name) // an empty lock or counts file takes an inode, no space
			}
			if old, ok := before[name]; ok && strings.HasPrefix(name, ".counts/") && len(old) == len(b) {
				// Counting adds to words in place, which needs no space:
				// the failures are still counted, nothing is torn.
				after[name] = old
			}
		}
		if !equalFiles(before, after) {
			t.Errorf("files changed on a full disk (a torn write?): before %v, after %v", keys(before), keys(after))
		}
		if temps, _ := leftovers(t, state); len(temps) > 0 {
			t.Errorf("temporary files left on the full disk: %v", temps)
		}
		if c, err := decodeCounts(state, "c"); err != nil || c.Successes != 1 || c.Failures != 3 {
			t.Errorf("counts after the full-disk runs: %+v, %v; want the one success before and the 3 failures in place", c, err)
		}
	})
}

// checkRunsUnprotected runs a failing command three times and a good one
// once on circuit c: each runs, with exactly one warning about the store
// naming why.
func checkRunsUnprotected(t *testing.T, state, why string) {
	t.Helper()
	for i := range 3 {
		p := fb(t, state, testenv.RunArgs("c", tripAtOnce, failing...)...)
		if p.Code != 1 || p.Stdout != "ran\n" {
			t.Fatalf("run %d: exit %d, stdout %q; want the command run (exit 1, ran)\n%s", i, p.Code, p.Stdout, p.Stderr)
		}
		checkOneWarning(t, p.Stderr, "state store unusable; running without circuit protection", why)
	}
	p := fb(t, state, testenv.RunArgs("fresh-circuit", nil, "echo", "ran")...)
	if p.Code != 0 || p.Stdout != "ran\n" {
		t.Fatalf("exit %d, stdout %q\n%s", p.Code, p.Stdout, p.Stderr)
	}
	checkOneWarning(t, p.Stderr, "state store unusable", why)
}

func checkOneWarning(t *testing.T, stderr string, want ...string) {
	t.Helper()
	w := storeWarnings(stderr)
	if len(w) != 1 {
		t.Fatalf("want exactly one warning about the store, got %d:\n%s", len(w), stderr)
	}
	for _, s := range want {
		if !strings.Contains(w[0], s) {
			t.Errorf("warning %q does not say %q", w[0], s)
		}
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				t.Fatal(err)
			}
			return
		}
	}
}

// readAll returns the content of every regular file under dir.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, rel := range tree(t, dir) {
		p := filepath.Join(dir, rel)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[rel] = b
		}
	}
	return out
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestUnsafeStateDirIsRefused: a state dir another user could plant files
// in is not used. What fusebox does then: it logs one warning that the
// store is unusable, naming the dir and why it is refused, and runs the
// command unprotected; nothing is written to the dir.
func TestUnsafeStateDirIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		why   string
	}{
		{"owned by another user", func(t *testing.T, dir string) {
			needRoot(t, "chown to another uid")
			if err := os.Chown(dir, 1001, 1001); err != nil {
				t.Fatal(err)
			}
		}, "is owned by uid 1001, not by you (uid 0): refusing it"},
		{"world-writable without the sticky bit", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "is writable by every user (mode drwxrwxrwx) without the sticky bit: refusing it"},
		{"world-writable with the sticky bit", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
				t.Fatal(err)
			}
		}, "is writable by every user (mode dtrwxrwxrwx), and the sticky bit still lets anyone plant files in it: refusing it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(state, 0o700); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, state)
			for range 2 {
				p := fb(t, state, testenv.RunArgs("c", tripAtOnce, failing...)...)
				if p.Code != 1 || p.Stdout != "ran\n" {
					t.Fatalf("exit %d, stdout %q; want the command run\n%s", p.Code, p.Stdout, p.Stderr)
				}
				w := storeWarnings(p.Stderr)
				if len(w) != 1 || !strings.Contains(w[0], "state store unusable") {
					t.Fatalf("want one warning that the store is unusable, saying why; got:\n%s", p.Stderr)
				}
				if want := "state dir " + state + " " + tc.why; !strings.Contains(w[0], want) {
					t.Errorf("error %q does not say %q", w[0], want)
				}
			}
			p := fb(t, state, "status")
			if p.Code != 1 || !strings.Contains(p.Stderr, "fusebox: state store: state dir "+state) {
				t.Errorf("status: exit %d, want 1 and an error naming the dir:\n%s", p.Code, p.Stderr)
			}
			if got := tree(t, state); len(got) > 0 {
				t.Errorf("wrote %v to a refused dir", got)
			}
		})
	}
}

// planted is a file outside the state dir that a symlink in it points to.
type planted struct {
	path    string
	content []byte
	mtime   time.Time
}

func plant(t *testing.T, link string) planted {
	t.Helper()
	target := filepath.Join(t.TempDir(), "target")
	content := []byte(`{"name":"c","state":"forced_open","generation":99}`)
	if err := os.WriteFile(target, content, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * 24 * time.Hour) // old enough for any gc
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(target)
	return planted{path: target, content: content, mtime: fi.ModTime()}
}

func (p planted) check(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(p.path)
	fi, serr := os.Stat(p.path)
	if err != nil || serr != nil || !bytes.Equal(b, p.content) || !fi.ModTime().Equal(p.mtime) {
		t.Errorf("the symlink's target %s was touched: %q, %v, %v", p.path, b, err, serr)
	}
}

// TestPlantedSymlinkIsNeverFollowed plants, in place of each file a circuit
// uses, a symlink to a file outside the state dir, and runs fusebox
// commands over it, gc included. The target is never read as state, written
// or removed; the call still goes through.
func TestPlantedSymlinkIsNeverFollowed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		link   string // relative to the state dir
		trip   bool   // trip the circuit first, so that the run is a skip
		args   []string
		code   int
		stdout string
		warn   string // the one warning about the store
	}{
		{"state file", "c.json", false, testenv.RunArgs("c", nil, "echo", "ran"), 0, "ran\n", "it is a symlink"},
		{"event log", "events/c.jsonl", false, testenv.RunArgs("c", []string{"--attempts", "1"}, failing...), 1, "ran\n", "it is a symlink"},
		// A failure takes the circuit's lock (a success only counts).
		{"lock file", ".locks/c.lock", false, testenv.RunArgs("c", []string{"--attempts", "1"}, failing...), 1, "ran\n", "it is a symlink"},
		{"counts file of a healthy circuit", ".counts/c.counts", false, testenv.RunArgs("c", nil, "echo", "ran"), 0, "ran\n", "it is a symlink"},
		{"counts file", ".counts/c.counts", true, testenv.RunArgs("c", nil, "echo", "ran"), 75, "", "it is a symlink"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			if tc.trip {
				if p := fb(t, state, "trip", "--new", "c"); p.Code != 0 {
					t.Fatalf("trip: exit %d\n%s", p.Code, p.Stderr)
				}
			}
			link := filepath.Join(state, tc.link)
			target := plant(t, link)
			p := fb(t, state, tc.args...)
			target.check(t)
			if p.Code != tc.code || p.Stdout != tc.stdout {
				t.Fatalf("exit %d, stdout %q; want %d, %q\n%s", p.Code, p.Stdout, tc.code, tc.stdout, p.Stderr)
			}
			var w []string
			for _, l := range storeWarnings(p.Stderr) {
				if !strings.Contains(l, "skipped: circuit c is forced open") {
					w = append(w, l)
				}
			}
			if len(w) != 1 || !strings.Contains(w[0], tc.warn) {
				t.Errorf("want one warning saying %q, got:\n%s", tc.warn, p.Stderr)
			}
			for _, args := range [][]string{{"status", "--json"}, {"gc"}, {"reset", "c"}, testenv.RunArgs("c", nil, "true")} {
				fb(t, state, args...)
				target.check(t)
			}
			fi, err := os.Lstat(link)
			if err == nil && fi.Mode()&os.ModeSymlink == 0 {
				// Moved aside and replaced: the link itself must be kept aside.
				moved, _ := filepath.Glob(link + ".corrupt-*")
				if len(moved) != 1 {
					t.Errorf("the link was replaced but not kept aside: %v", moved)
				} else if fi, err := os.Lstat(moved[0]); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("%s is not the planted link: %v", moved[0], err)
				}
			}
		})
	}
}

// TestPlantedSymlinkedSubdirIsNeverFollowed plants a symlink in place of
// each subdirectory the store creates lazily (events, answers, .locks,
// .counts), pointing at a directory outside the state dir that holds files
// of its own. fusebox refuses a state dir others can create entries in, but
// links may have been planted before (while the dir was world-writable with
// the sticky bit, which older fusebox accepted) or restored from a backup.
func TestPlantedSymlinkedSubdirIsNeverFollowed(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir()
	old := time.Now().Add(-10 * 24 * time.Hour)
	files := map[string]string{
		"app.jsonl": "a log line of another program\n", "settings.json": `{"keep": true}`, "weather.json": `{"mine": 1}`,
		"db.lock": "", "db.counts": "",
	}
	for name, content := range files {
		p := filepath.Join(victim, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"events", "answers", ".locks", ".counts"} {
		if err := os.Symlink(victim, filepath.Join(state, sub)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"temp": 21}`) }))
	defer srv.Close()
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte("circuits:\n  weather:\n    fresh: 1m\n    http: {url: '"+srv.URL+"'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fb(t, state, testenv.RunArgs("c", tripAtOnce, failing...)...)
	fb(t, state, testenv.RunArgs("c", nil, "true")...)
	fb(t, state, "call", "--config", config, "weather")
	fb(t, state, "gc")
	got := map[string]string{}
	for _, e := range must(os.ReadDir(victim)) {
		got[e.Name()] = string(must(os.ReadFile(filepath.Join(victim, e.Name()))))
	}
	if !maps.Equal(got, files) {
		t.Errorf("the dir behind the planted symlinks now holds\n%q\nwant it untouched:\n%q", got, files)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
