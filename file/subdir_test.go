package file_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// victimFiles are the files of another program, in a directory outside the
// state dir that a planted symlink points to. Each is old enough for any GC,
// and named as fusebox's own would be.
var victimFiles = map[string]string{
	"app.jsonl":                             "a log line of another program\n",
	"db.jsonl":                              `{"time":"2001-01-01T00:00:00Z","circuit":"db","kind":"transition"}` + "\n",
	"settings.json":                         `{"keep": true}`,
	"weather.json":                          `{"mine": 1}`,
	"db.lock":                               "",
	"db.counts":                             "..",
	".weather.json.tmp-1-a":                 "a temporary file",
	"weather.json.corrupt-20010101T000000Z": "moved aside long ago",
}

// plantVictim makes a directory holding victimFiles, all last written ten
// weeks ago, and returns it with a snapshot to compare against.
func plantVictim(t *testing.T) (string, map[string]string) {
	t.Helper()
	victim := t.TempDir()
	for name, content := range victimFiles {
		writeFile(t, filepath.Join(victim, name), []byte(content))
		age(t, victim, 10*week, name)
	}
	return victim, snapshot(t, victim)
}

// snapshot returns each entry of dir with its content and mtime.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.ModTime().String() + " " + string(readFile(t, filepath.Join(dir, e.Name())))
	}
	return out
}

// TestSymlinkedSubdirIsRefused plants, in place of each subdirectory, a
// symlink to a directory outside the state dir. The calls that need it fail
// with an *UnsafeDirError naming it (the caller then runs unprotected), the
// others work, and GC leaves it alone with a warning: nothing in the
// directory it points to is read as state, created, changed or removed.
func TestSymlinkedSubdirIsRefused(t *testing.T) {
	update := func(s *file.Store) error { _, err := s.Update(ctx, "db", succeed); return err }
	count := func(s *file.Store) error { return s.Count(ctx, "db", fusebox.Counts{Skips: 1}) }
	counts := func(s *file.Store) error { _, err := s.Counts(ctx, "db"); return err }
	saveAnswer := func(s *file.Store) error { return s.SaveAnswer(ctx, "weather", answers.Answer{Body: []byte("sunny")}) }
	loadAnswer := func(s *file.Store) error { _, _, err := s.LoadAnswer(ctx, "weather"); return err }
	events := func(s *file.Store) error { _, err := s.Events(ctx, "db", time.Time{}); return err }
	loadDamaged := func(s *file.Store) error { _, err := s.Load(ctx, "damaged"); return err } // moved aside under the lock
	for _, c := range []struct {
		sub     string
		refused []func(*file.Store) error
		work    []func(*file.Store) error
	}{
		{"events", []func(*file.Store) error{update, events}, []func(*file.Store) error{count, counts, saveAnswer, loadAnswer, loadDamaged}},
		{".locks", []func(*file.Store) error{update, loadDamaged}, []func(*file.Store) error{count, counts, saveAnswer, loadAnswer, events}},
		{".counts", []func(*file.Store) error{count, counts}, []func(*file.Store) error{update, saveAnswer, loadAnswer, events, loadDamaged}},
		{"answers", []func(*file.Store) error{saveAnswer, loadAnswer}, []func(*file.Store) error{update, count, counts, events, loadDamaged}},
	} {
		t.Run(c.sub, func(t *testing.T) {
			dir := t.TempDir()
			victim, before := plantVictim(t)
			link := filepath.Join(dir, c.sub)
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "damaged.json"), []byte("{"))
			writeFile(t, filepath.Join(dir, "unused.json"), []byte(`{"name":"unused"}`))
			age(t, dir, 10*week, "unused.json") // a circuit for GC to remove, if it can
			logOpt, log := withLog()
			s := open(t, dir, logOpt)

			for i, use := range c.refused {
				err := use(s)
				var unsafe *file.UnsafeDirError
				if !errors.As(err, &unsafe) || unsafe.Dir != link {
					t.Fatalf("call %d = %v, want an *UnsafeDirError for %s", i, err, link)
				}
				if msg := err.Error(); !strings.Contains(msg, link+" is a symlink: refusing to follow it; remove it") {
					t.Errorf("error %q should name the link and what to do", msg)
				}
			}
			for i, use := range c.work {
				if err := use(s); err != nil {
					t.Errorf("call %d = %v; it needs no %s", i, err, c.sub)
				}
			}
			if _, err := s.GC(ctx, time.Now(), time.Nanosecond, time.Nanosecond); err != nil {
				t.Errorf("GC: %v", err)
			}
			if w := log.warnings(); !slices.ContainsFunc(w, func(l string) bool {
				return strings.Contains(l, "gc left a state subdirectory alone") && strings.Contains(l, link) && strings.Contains(l, "symlink")
			}) {
				t.Errorf("warnings:\n%s\nwant one from GC naming %s", strings.Join(w, ""), link)
			}

			if after := snapshot(t, victim); !maps.Equal(after, before) {
				t.Errorf("the dir behind the link now holds\n%q\nwant it untouched:\n%q", after, before)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was touched: %v, %v", fi, err)
			}
		})
	}
}

func TestUnsafeSubdirIsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, sub string)
		says  string
	}{
		{"world-writable with sticky bit", func(t *testing.T, sub string) { chmod(t, sub, 0o777|os.ModeSticky) }, "is writable by every user"},
		{"owned by another user", func(t *testing.T, sub string) {
			if os.Geteuid() != 0 {
				testenv.Skip(t, "chown to another uid needs root")
			}
			if err := os.Chown(sub, 1001, 1001); err != nil {
				t.Fatal(err)
			}
		}, "is owned by uid 1001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sub := filepath.Join(dir, ".counts")
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			c.setup(t, sub)
			s := open(t, dir)
			err := s.Count(ctx, "db", fusebox.Counts{Skips: 1})
			var unsafe *file.UnsafeDirError
			if !errors.As(err, &unsafe) || unsafe.Dir != sub || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Count = %v, want an *UnsafeDirError saying %s %s", err, sub, c.says)
			}
			if got := ls(t, sub); len(got) > 0 {
				t.Errorf("wrote %q to a refused dir", got)
			}
		})
	}
}

func TestRemovedSubdirIsMadeAgain(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	mustUpdate(t, s, "db")
	if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"events", ".locks", ".counts"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	if st := mustUpdate(t, s, "db"); st.ConsecutiveFailures != 2 {
		t.Errorf("Update = %+v, want the second success", st)
	}
	if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
		t.Errorf("Count: %v", err)
	}
	if evs, err := s.Events(ctx, "db", time.Time{}); err != nil || len(evs) != 1 {
		t.Errorf("Events = %v, %v; want the one since the log was removed", evs, err)
	}
}
