package reliability

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// sharedDir is a state dir shared, with `fusebox state init --group`, by
// a household's two users: owned by a, used by b.
type sharedDir struct {
	t     *testing.T
	base  string // holds the binary and the state dir; every user may enter it
	bin   string
	state string
}

// household is two real users of one group, and a dir every user may
// enter holding a copy of the binary.
type household struct {
	group     string
	a, b      testenv.User
	base, bin string
}

func newHousehold(t *testing.T) *household {
	t.Helper()
	group, users := testenv.Group(t, 2)
	h := &household{group: group, a: users[0], b: users[1]}
	var err error
	if h.base, err = os.MkdirTemp("", "fusebox-shared-dir-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(h.base) })
	os.Chmod(h.base, 0o755)
	h.bin = filepath.Join(h.base, "fusebox")
	b, err := os.ReadFile(fuseboxBin)
	if err == nil {
		err = os.WriteFile(h.bin, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// dir makes the state dir name, shared with the group and owned by a.
func (h *household) dir(t *testing.T, name string) *sharedDir {
	t.Helper()
	d := &sharedDir{t: t, base: h.base, bin: h.bin, state: filepath.Join(h.base, name)}
	if out, err := exec.Command(h.bin, "state", "init", "--group", h.group, d.state).CombinedOutput(); err != nil {
		t.Fatalf("state init: %v\n%s", err, out)
	}
	if err := os.Chown(d.state, int(h.a.Cred.Uid), -1); err != nil {
		t.Fatal(err)
	}
	return d
}

// cmd is fusebox with args, run as u on the shared dir.
func (d *sharedDir) cmd(u testenv.User, args ...string) *exec.Cmd {
	cmd := testenv.FuseboxCmd(d.bin, d.state, []string{"HOME=" + d.base}, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Cred}
	cmd.Dir = d.base
	return cmd
}

// run runs fusebox with args as u, waiting for it.
func (d *sharedDir) run(u testenv.User, args ...string) testenv.Proc {
	d.t.Helper()
	return testenv.Run(d.t, d.cmd(u, args...))
}

// plant changes the file rel of the shared dir, as root, with make, then
// gives it to u.
func (d *sharedDir) plant(rel string, u testenv.User, make func(path string) error) string {
	d.t.Helper()
	path := filepath.Join(d.state, rel)
	if err := make(path); err != nil {
		d.t.Fatalf("plant %s: %v", rel, err)
	}
	if err := os.Lchown(path, int(u.Cred.Uid), -1); err != nil {
		d.t.Fatal(err)
	}
	return path
}

// serve starts `fusebox serve` as u on the shared dir; it is killed when
// the test ends if it is still running.
func (d *sharedDir) serve(u testenv.User) *testenv.Daemon {
	d.t.Helper()
	return testenv.StartDaemon(d.t, d.cmd(u, "serve", "--listen", "127.0.0.1:0"))
}

// circuitNames returns the circuit names of an /api/circuits or status
// --json document, and of /api/outages's, with their problems.
func circuitNames(t *testing.T, doc []byte) (names []string, problems map[string]string) {
	t.Helper()
	var rows []struct{ Name, Problem string }
	if err := json.Unmarshal(doc, &rows); err != nil {
		var tl struct{ Circuits []struct{ Name string } }
		if err := json.Unmarshal(doc, &tl); err != nil {
			t.Fatalf("not a circuits or outages document: %v\n%s", err, doc)
		}
		for _, c := range tl.Circuits {
			names = append(names, c.Name)
		}
		return names, nil
	}
	problems = map[string]string{}
	for _, r := range rows {
		names = append(names, r.Name)
		if r.Problem != "" {
			problems[r.Name] = r.Problem
		}
	}
	return names, problems
}

// errorLines returns stderr's ERROR lines.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range logLines(stderr) {
		if strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// Planted files: what another member (or a person) may leave in a shared
// dir that fusebox cannot use. Each but unreadable replaces the file.
var (
	fifo        = replacing(func(path string) error { return syscall.Mkfifo(path, 0o600) })
	plantedLink = replacing(func(path string) error { return os.Symlink("/etc/passwd", path) })
	oversized   = replacing(func(path string) error {
		if err := os.WriteFile(path, nil, 0o660); err != nil {
			return err
		}
		return os.Truncate(path, 1<<30) // sparse: it costs no disk
	})
	unreadable = func(path string) error { return os.Chmod(path, 0o600) } // as its owner's umask may leave it
)

func replacing(make func(path string) error) func(string) error {
	return func(path string) error {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return make(path)
	}
}

const exitOpen = 75 // the circuit is open: nothing was run

// TestSharedDirDefendsItself plants, in a state dir two real users of one
// group share, a file in place of each file of circuit c that member b
// cannot use: a FIFO, a symlink, a file member a left readable only to
// itself (0600), a state file of a gigabyte. Then b's daemon answers
// /api/circuits and /api/outages (200, every circuit), b's `status` shows
// every circuit, and b's runs of a failing command open the circuit and
// then skip it, which a then sees too. Exactly one ERROR, from whichever
// process met the file first, says it was moved aside; no run goes without
// circuit protection; the file is kept aside and a shared 0660 one
// replaces it.
func TestSharedDirDefendsItself(t *testing.T) {
	h := newHousehold(t)
	a, b := h.a, h.b

	policy := []string{"--attempts", "1", "--trip-after", "2"}
	for i, tc := range []struct {
		name    string
		rel     string
		plant   func(string) error
		problem string // in the one ERROR
	}{
		{"counts file a FIFO", ".counts/c.counts", fifo, "it is not a regular file (a FIFO)"},
		{"counts file left unreadable", ".counts/c.counts", unreadable, "may not open it"},
		{"counts file a symlink", ".counts/c.counts", plantedLink, "it is a symlink"},
		{"lock file a FIFO", ".locks/c.lock", fifo, "it is not a regular file (a FIFO)"},
		{"lock file left unreadable", ".locks/c.lock", unreadable, "may not open it"},
		{"lock file a symlink", ".locks/c.lock", plantedLink, "it is a symlink"},
		{"state file a FIFO", "c.json", fifo, "it is not a regular file"},
		{"state file left unreadable", "c.json", unreadable, "may not open it"},
		{"state file of 1 GiB", "c.json", oversized, "it holds 1073741824 bytes, more than the 1048576 a record may"},
		{"event log a FIFO", "events/c.jsonl", fifo, "it is not a regular file (a FIFO)"},
		{"event log left unreadable", "events/c.jsonl", unreadable, "may not open it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := h.dir(t, fmt.Sprintf("state-%d", i))
			// a's circuits: c with every file (counts, lock, state, events)
			// and closed, other healthy.
			for _, args := range [][]string{testenv.RunArgs("c", nil, "true"), {"trip", "c"}, {"reset", "c"}, testenv.RunArgs("other", nil, "true")} {
				if p := d.run(a, args...); p.Code != 0 {
					t.Fatalf("%s: fusebox %q: exit %d\n%s", a.Name, args, p.Code, p.Stderr)
				}
			}
			path := d.plant(tc.rel, a, tc.plant)
			var stderr strings.Builder

			dm := d.serve(b)
			for _, api := range []string{"/api/circuits", "/api/outages"} {
				code, _, body := dm.Get(t, api)
				names, problems := circuitNames(t, []byte(body))
				if code != 200 || !slices.Contains(names, "other") || !slices.Contains(names, "c") || len(problems) > 0 {
					t.Errorf("%s's daemon: GET %s = %d, circuits %q, problems %q; want 200, c and other, none:\n%s", b.Name, api, code, names, problems, body)
				}
			}
			stderr.WriteString(dm.Stop(t))

			p := d.run(b, "status", "--json")
			names, problems := circuitNames(t, []byte(p.Stdout))
			if p.Code != 0 || !slices.Equal(names, []string{"c", "other"}) || len(problems) > 0 {
				t.Errorf("%s: status: exit %d, circuits %q, problems %q; want 0, c and other, none\n%s", b.Name, p.Code, names, problems, p.Stderr)
			}
			stderr.WriteString(p.Stderr)

			for i, want := range []int{1, 1, exitOpen} {
				p := d.run(b, testenv.RunArgs("c", policy, failing...)...)
				if p.Code != want {
					t.Fatalf("%s's run %d of a failing command: exit %d, want %d (the circuit opens after 2 failures, then skips)\n%s", b.Name, i+1, p.Code, want, p.Stderr)
				}
				stderr.WriteString(p.Stderr)
			}
			if p := d.run(a, testenv.RunArgs("c", policy, failing...)...); p.Code != exitOpen {
				t.Errorf("%s after %s opened c: exit %d, want %d\n%s", a.Name, b.Name, p.Code, exitOpen, p.Stderr)
			} else {
				stderr.WriteString(p.Stderr)
			}

			errs := errorLines(stderr.String())
			if len(errs) != 1 || !strings.Contains(errs[0], "moved aside a file fusebox cannot use") ||
				!strings.Contains(errs[0], "file="+path) || !strings.Contains(errs[0], tc.problem) {
				t.Errorf("want exactly one ERROR, that %s was moved aside because %s; got:\n%s", path, tc.problem, stderr.String())
			}
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) != 1 {
				t.Errorf("moved aside as %q, want one %s.corrupt-TIME", moved, path)
			}
			if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || fi.Mode().Perm() != 0o660) {
				t.Errorf("%s was replaced by %v, want a regular file, mode 0660", path, fi.Mode())
			}
		})
	}
}

// TestSharedDirThatForbidsTheMoveShowsTheRest: where a file cannot be
// moved aside (its subdirectory has the sticky bit, so only the file's
// owner may rename it), status and the daemon show every other circuit
// and say what is wrong with the one (its counts; its event log is left
// out of the outages); the circuit still opens and skips.
func TestSharedDirThatForbidsTheMoveShowsTheRest(t *testing.T) {
	h := newHousehold(t)
	a, b := h.a, h.b
	d := h.dir(t, "state")
	for _, args := range [][]string{testenv.RunArgs("c", nil, "true"), {"trip", "c"}, {"reset", "c"}, testenv.RunArgs("other", nil, "true")} {
		if p := d.run(a, args...); p.Code != 0 {
			t.Fatalf("%s: fusebox %q: exit %d\n%s", a.Name, args, p.Code, p.Stderr)
		}
	}
	path := d.plant(".counts/c.counts", a, unreadable)
	log := d.plant("events/c.jsonl", a, unreadable)
	for _, p := range []string{path, log} {
		if err := os.Chmod(filepath.Dir(p), 0o770|os.ModeSetgid|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}

	p := d.run(b, "status", "--json")
	names, problems := circuitNames(t, []byte(p.Stdout))
	if p.Code != 1 || !slices.Equal(names, []string{"c", "other"}) || !strings.Contains(problems["c"], path) || problems["other"] != "" {
		t.Errorf("%s: status: exit %d, circuits %q, problems %q; want 1, c (with a problem naming %s) and other\n%s", b.Name, p.Code, names, problems, path, p.Stderr)
	}
	if !strings.Contains(p.Stderr, "1 of 2 circuits shown without their state or counts") {
		t.Errorf("status's stderr does not say which circuits it could not read:\n%s", p.Stderr)
	}
	dm := d.serve(b)
	for _, api := range []string{"/api/circuits", "/api/outages"} {
		code, _, body := dm.Get(t, api)
		names, _ := circuitNames(t, []byte(body))
		if code != 200 || !slices.Equal(names, []string{"c", "other"}) {
			t.Errorf("%s's daemon: GET %s = %d, circuits %q; want 200, c and other:\n%s", b.Name, api, code, names, body)
		}
	}
	dm.Stop(t)
	for i, want := range []int{1, 1, exitOpen} {
		if p := d.run(b, testenv.RunArgs("c", []string{"--attempts", "1", "--trip-after", "2"}, failing...)...); p.Code != want {
			t.Fatalf("%s's run %d of a failing command: exit %d, want %d (the circuit opens after 2 failures, then skips)\n%s", b.Name, i+1, p.Code, want, p.Stderr)
		}
	}
}

// TestManyProcessesMeetOneFIFOLock: sixteen runs, by both members at once,
// meet a FIFO in place of the circuit's lock file: it is moved aside once,
// with one ERROR among them all, and every run's failure is recorded under
// the new lock.
func TestManyProcessesMeetOneFIFOLock(t *testing.T) {
	h := newHousehold(t)
	a, b := h.a, h.b
	d := h.dir(t, "state")
	if p := d.run(a, "trip", "--new", "c"); p.Code != 0 {
		t.Fatalf("trip: exit %d\n%s", p.Code, p.Stderr)
	}
	if p := d.run(a, "reset", "c"); p.Code != 0 {
		t.Fatalf("reset: exit %d\n%s", p.Code, p.Stderr)
	}
	path := d.plant(".locks/c.lock", a, fifo)
	const runs = 16
	var wg sync.WaitGroup
	results := make([]testenv.Proc, runs)
	for i := range runs {
		u := []testenv.User{a, b}[i%2]
		wg.Go(func() {
			results[i] = d.run(u, testenv.RunArgs("c", []string{"--attempts", "1", "--trip-after", "1000"}, failing...)...)
		})
	}
	wg.Wait()
	var errs []string
	for i, p := range results {
		if p.Code != 1 || p.Stdout != "ran\n" {
			t.Errorf("run %d: exit %d, stdout %q; want the command run and failed\n%s", i, p.Code, p.Stdout, p.Stderr)
		}
		errs = append(errs, errorLines(p.Stderr)...)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "moved aside a file fusebox cannot use") {
		t.Errorf("want one ERROR among the %d runs, that the FIFO was moved aside; got %d:\n%s", runs, len(errs), strings.Join(errs, "\n"))
	}
	if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 1 {
		t.Errorf("moved aside as %q, want one", moved)
	}
	p := d.run(b, "status", "--json", "c")
	var rows []struct {
		ConsecutiveFailures int `json:"consecutive_failures"`
	}
	if err := json.Unmarshal([]byte(p.Stdout), &rows); err != nil || len(rows) != 1 || rows[0].ConsecutiveFailures != runs {
		t.Errorf("status of c: %s (%v); want %d consecutive failures: an update was lost", p.Stdout, err, runs)
	}
}
