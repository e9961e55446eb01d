package file_test

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// sharedStateDir is a dir shared with the caller's group, as `fusebox
// state init --group` makes it.
func sharedStateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := file.InitShared(dir, os.Getegid()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// errorLines returns the log's ERROR lines.
func (l *logBuffer) errorLines() []string { return l.Lines("level=ERROR") }

// useEverySubdir is a circuit's every use of the state dir: an update (its
// lock, its event log), a count, an answer saved and read back.
func useEverySubdir(t *testing.T, s *file.Store, name string) {
	t.Helper()
	mustUpdate(t, s, name)
	if err := s.Count(ctx, name, fusebox.Counts{Skips: 1}); err != nil {
		t.Errorf("Count: %v", err)
	}
	if c, err := s.Counts(ctx, name); err != nil || c.Skips != 1 {
		t.Errorf("Counts = %+v, %v; want the one skip", c, err)
	}
	if evs, err := s.Events(ctx, name, time.Time{}); err != nil || len(evs) != 1 {
		t.Errorf("Events = %v, %v; want the update's", evs, err)
	}
	if err := s.SaveAnswer(ctx, name, answers.Answer{Body: []byte("sunny")}); err != nil {
		t.Errorf("SaveAnswer: %v", err)
	}
	if _, ok, err := s.LoadAnswer(ctx, name); err != nil || !ok {
		t.Errorf("LoadAnswer = %v, %v; want the answer saved", ok, err)
	}
}

// checkSharedSubdir fails unless path is a directory every member may use:
// 2770, setgid, the caller's group.
func checkSharedSubdir(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(fs.ModeType|fs.ModePerm|fs.ModeSetgid) != fs.ModeDir|0o770|fs.ModeSetgid || int(fi.Sys().(*syscall.Stat_t).Gid) != os.Getegid() {
		t.Errorf("%s is %v, group %d; want drwxrws--- of group %d", path, fi.Mode(), fi.Sys().(*syscall.Stat_t).Gid, os.Getegid())
	}
}

// TestAnUnusableSubdirOfASharedDirIsMovedAside plants, in place of each
// subdirectory of a shared dir, what one member may leave there that the
// others cannot use: a symlink, a file. (Another member's 0700 directory
// is moved aside too, but not by root, which shares it in place: see
// reliability's TestAMembersPrivateSubdirDoesNotDisarmASharedDir.)
// Refused, it would disarm every circuit of the others ("running without
// circuit protection"); it is moved aside instead, with one ERROR naming
// it, and made again shared, and every use of the store works. A symlink
// moved aside is the link itself: the dir it points to is untouched.
func TestAnUnusableSubdirOfASharedDirIsMovedAside(t *testing.T) {
	for _, c := range []struct {
		name    string
		plant   func(t *testing.T, path string)
		problem string
	}{
		{"a symlink", func(t *testing.T, path string) {
			victim, _ := plantVictim(t)
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}, "it is a symlink"},
		{"a file", func(t *testing.T, path string) { writeFile(t, path, []byte("x")) }, "it is not a directory"},
	} {
		for _, sub := range []string{"events", ".locks", ".counts", "answers"} {
			t.Run(c.name+" as "+sub, func(t *testing.T) {
				dir := sharedStateDir(t)
				path := filepath.Join(dir, sub)
				c.plant(t, path)
				planted, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				var target map[string]string
				if planted.Mode()&fs.ModeSymlink != 0 {
					to, _ := os.Readlink(path)
					target = snapshot(t, to)
					defer func() {
						if after := snapshot(t, to); !maps.Equal(after, target) {
							t.Errorf("the dir behind the link now holds\n%q\nwant it untouched:\n%q", after, target)
						}
					}()
				}
				logOpt, log := withLog()
				s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))

				useEverySubdir(t, s, "db")
				errs := log.errorLines()
				if len(errs) != 1 || !strings.Contains(errs[0], "moved aside a file fusebox cannot use") ||
					!strings.Contains(errs[0], "file="+path) || !strings.Contains(errs[0], c.problem) {
					t.Errorf("ERRORs:\n%s\nwant one, that %s was moved aside because %s", strings.Join(errs, ""), path, c.problem)
				}
				moved, err := os.Lstat(path + corruptSuffix)
				if err != nil || !os.SameFile(moved, planted) {
					t.Errorf("%s%s: %v; want what was planted, kept aside", path, corruptSuffix, err)
				}
				checkSharedSubdir(t, path)

				// Another Store, another process: nothing more to say.
				logOpt, log = withLog()
				useEverySubdir(t, open(t, dir, logOpt), "other")
				if errs := log.errorLines(); len(errs) > 0 {
					t.Errorf("the next process logged:\n%s", strings.Join(errs, ""))
				}
			})
		}
	}
}

// TestMyOwnUnsharedSubdirOfASharedDirIsSharedInPlace: a subdirectory the
// caller left 0700 in a shared dir (made before the dir was shared, or by
// hand) is the caller's to fix: it is made 2770 in place, silently, and
// keeps what it holds. Root shares another member's the same way.
func TestMyOwnUnsharedSubdirOfASharedDirIsSharedInPlace(t *testing.T) {
	for _, owner := range []int{os.Geteuid(), 1001} {
		t.Run("uid "+strconv.Itoa(owner), func(t *testing.T) {
			if owner != os.Geteuid() && os.Geteuid() != 0 {
				testenv.Skip(t, "chown to another uid needs root")
			}
			dir := sharedStateDir(t)
			for _, sub := range []string{"events", ".locks", ".counts", "answers"} {
				mkdir(t, filepath.Join(dir, sub))
			}
			writeFile(t, filepath.Join(dir, "events", "db.jsonl"), []byte(`{"time":"`+time.Now().UTC().Format(time.RFC3339)+`","circuit":"db","kind":"transition"}`+"\n"))
			for _, sub := range []string{"events", ".locks", ".counts", "answers"} {
				if err := os.Chown(filepath.Join(dir, sub), owner, -1); err != nil {
					t.Fatal(err)
				}
			}
			logOpt, log := withLog()
			s := open(t, dir, logOpt)
			mustUpdate(t, s, "db")
			if evs, err := s.Events(ctx, "db", time.Time{}); err != nil || len(evs) != 2 {
				t.Errorf("Events = %v, %v; want the old one and the update's", evs, err)
			}
			useEverySubdir(t, open(t, dir, logOpt), "other")
			if w := log.Lines("level="); len(w) > 0 {
				t.Errorf("logged:\n%s\nwant nothing", strings.Join(w, ""))
			}
			for _, sub := range []string{"events", ".locks", ".counts", "answers"} {
				checkSharedSubdir(t, filepath.Join(dir, sub))
			}
			if got := ls(t, dir); slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, ".corrupt-") }) {
				t.Errorf("moved aside: %q", got)
			}
		})
	}
}

// TestGCRemovesASubdirMovedAsideWithWhatItHeld: a subdirectory moved aside
// is removed, with its files, by the GC that removes damaged files, never
// through a symlink.
func TestGCRemovesASubdirMovedAsideWithWhatItHeld(t *testing.T) {
	dir := sharedStateDir(t)
	victim, before := plantVictim(t)
	writeFile(t, filepath.Join(dir, ".counts"), []byte("x"))
	if err := os.Symlink(victim, filepath.Join(dir, "events")); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, file.WithNow(func() time.Time { return fixedNow }))
	useEverySubdir(t, s, "db")
	aside := []string{".counts" + corruptSuffix, "events" + corruptSuffix}
	// A directory moved aside, as one member's 0700 one is by another.
	old := filepath.Join(dir, ".locks.corrupt-20010101T000000Z")
	mkdir(t, old)
	mkdir(t, filepath.Join(old, "inner"))
	writeFile(t, filepath.Join(old, "inner", "db.lock"), nil)
	aside = append(aside, filepath.Base(old))
	for _, name := range aside {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s: %v; want it moved aside", name, err)
		}
	}
	for _, name := range aside {
		lage(t, filepath.Join(dir, name), 10*week)
	}
	gc(t, s, week, week)
	for _, name := range aside {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s is still there after GC", name)
		}
	}
	if after := snapshot(t, victim); !maps.Equal(after, before) {
		t.Errorf("GC reached through the link moved aside: the dir behind it now holds\n%q\nwant\n%q", after, before)
	}
}

// mkdir makes the directory path, 0700.
func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

// lage is age of path itself, a symlink or not.
func lage(t *testing.T, path string, d time.Duration) {
	t.Helper()
	at := unix.NsecToTimespec(time.Now().Add(-d).UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{at, at}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}
}

// A store kept in a subdirectory of a state dir (a Redis replica) is made
// as the state dir's own subdirectories are: in a shared dir 2770, setgid
// and of its group, so that every member may open it; elsewhere 0700.
// A name that is not a plain one is refused.
func TestASubdirForAStoreIsMadeAsTheDirsOwn(t *testing.T) {
	for _, c := range []struct {
		name   string
		dir    string
		shared bool
	}{{"shared", sharedStateDir(t), true}, {"private", filepath.Join(t.TempDir(), "state"), false}} {
		s, err := file.Open(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range 2 { // the second finds it made
			sub, err := s.Subdir(".redis")
			if err != nil || sub != filepath.Join(c.dir, ".redis") {
				t.Fatalf("%s: Subdir = %q, %v", c.name, sub, err)
			}
		}
		if c.shared {
			checkSharedSubdir(t, filepath.Join(c.dir, ".redis"))
		} else if fi, err := os.Lstat(filepath.Join(c.dir, ".redis")); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a 0700 dir", c.name, fi.Mode(), err)
		}
		for _, bad := range []string{"", ".", "..", "a/b", "../x"} {
			if _, err := s.Subdir(bad); err == nil {
				t.Errorf("%s: Subdir(%q) made something", c.name, bad)
			}
		}
	}
}
