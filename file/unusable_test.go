package file_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/file"
)

// TestFilesItCannotUseAreMovedAside plants, in place of each file of
// circuit db, one the Store cannot use, and meets it with each method that
// opens it: the file is moved aside with one error, and the method works
// on a new one. (reliability/shared_test.go plants them as another user
// of a shared dir would leave them, unreadable ones included.)
func TestFilesItCannotUseAreMovedAside(t *testing.T) {
	fifo := func(t *testing.T, path string) { mkfifo(t, path) }
	socket := func(t *testing.T, path string) {
		mkdirs(t, path)
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	dir := func(t *testing.T, path string) {
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	count := func(s *file.Store) error { return s.Count(ctx, "db", fusebox.Counts{Skips: 1}) }
	counts := func(s *file.Store) error { _, err := s.Counts(ctx, "db"); return err }
	update := func(s *file.Store) error { _, err := s.Update(ctx, "db", succeed); return err }
	events := func(s *file.Store) error { _, err := s.Events(ctx, "db", time.Time{}); return err }
	for _, tc := range []struct {
		name    string
		rel     string
		plant   func(*testing.T, string)
		use     func(*file.Store) error
		problem string
	}{
		{"counts a FIFO met by Count", ".counts/db.counts", fifo, count, "it is not a regular file (a FIFO)"},
		{"counts a FIFO met by Counts", ".counts/db.counts", fifo, counts, "it is not a regular file (a FIFO)"},
		{"counts a socket met by Count", ".counts/db.counts", socket, count, "it is not a regular file (a socket)"},
		{"lock a FIFO met by Update", ".locks/db.lock", fifo, update, "it is not a regular file (a FIFO)"},
		{"lock a socket met by Update", ".locks/db.lock", socket, update, "it is not a regular file (a socket)"},
		{"lock a directory met by Update", ".locks/db.lock", dir, update, "it is not a regular file (a directory)"},
		{"event log a FIFO met by Events", "events/db.jsonl", fifo, events, "it is not a regular file (a FIFO)"},
		{"event log a socket met by Update", "events/db.jsonl", socket, update, "it is not a regular file (a socket)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logOpt, log := withLog()
			s := open(t, dir, logOpt, file.WithNow(func() time.Time { return fixedNow }))
			path := filepath.Join(dir, tc.rel)
			tc.plant(t, path)
			if err := tc.use(s); err != nil {
				t.Fatalf("%v; want the file moved aside and the call to work", err)
			}
			if _, err := os.Lstat(path + corruptSuffix); err != nil {
				t.Errorf("not moved aside: %v", err)
			}
			if errs := log.Lines("level=ERROR"); len(errs) != 1 || !strings.Contains(errs[0], "moved aside a file fusebox cannot use") || !strings.Contains(errs[0], tc.problem) {
				t.Errorf("log:\n%s\nwant one error saying %q", log.String(), tc.problem)
			}
			// The circuit works on a new file.
			if err := tc.use(s); err != nil {
				t.Errorf("again: %v", err)
			}
			if len(log.warnings()) != 1 {
				t.Errorf("the new file was moved aside too:\n%s", log.String())
			}
		})
	}
}

// TestStoresMeetingOneFIFOMoveItAsideOnce: Stores of their own (as separate
// processes have) all counting at once into a FIFO planted as the counts
// file: one of them moves it aside, nobody moves aside the new file another
// made, and every add is counted.
func TestStoresMeetingOneFIFOMoveItAsideOnce(t *testing.T) {
	dir := t.TempDir()
	logOpt, log := withLog()
	path := filepath.Join(dir, ".counts", "db.counts")
	mkfifo(t, path)
	const n = 20
	var wg sync.WaitGroup
	for range n {
		s := open(t, dir, logOpt)
		wg.Go(func() {
			if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	c, err := open(t, dir).Counts(ctx, "db")
	if err != nil || c.Skips != n {
		t.Errorf("Counts = %+v, %v; want the %d skips: adds went into a file moved aside", c, err, n)
	}
	moved, _ := filepath.Glob(path + ".corrupt-*")
	if errs := log.Lines("level=ERROR"); len(errs) != 1 || len(moved) != 1 {
		t.Errorf("moved aside %q with errors:\n%s\nwant the FIFO, once, with one error", moved, strings.Join(errs, "\n"))
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	mkdirs(t, path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestNamesListsACircuitWhoseFileIsAFIFO: a circuit whose only file is a
// FIFO (it only ever succeeded: no state file) is still listed, so that
// status meets it and shows it, instead of leaving it out.
func TestNamesListsACircuitWhoseFileIsAFIFO(t *testing.T) {
	dir := t.TempDir()
	logOpt, log := withLog()
	s := open(t, dir, logOpt)
	if err := s.Count(ctx, "web", fusebox.Counts{Successes: 1}); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, ".counts", "db.counts"))
	names, err := s.Names(ctx)
	if err != nil || strings.Join(names, ",") != "db,web" {
		t.Fatalf("Names = %q, %v; want db and web", names, err)
	}
	if c, err := s.Counts(ctx, "db"); err != nil || c != (fusebox.Counts{}) {
		t.Errorf("Counts of db = %+v, %v; want none, the FIFO moved aside", c, err)
	}
	if len(log.warnings()) != 1 {
		t.Errorf("log:\n%s\nwant one error", log.String())
	}
}
