package file_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

const week = 7 * 24 * time.Hour

// age sets the mtime of dir's files at paths to now-d.
func age(t *testing.T, dir string, d time.Duration, paths ...string) {
	t.Helper()
	at := time.Now().Add(-d)
	for _, p := range paths {
		if err := os.Chtimes(filepath.Join(dir, p), at, at); err != nil {
			t.Fatal(err)
		}
	}
}

func gc(t *testing.T, s *file.Store, unusedFor, eventsFor time.Duration) fusebox.GCReport {
	t.Helper()
	r, err := s.GC(ctx, time.Now(), unusedFor, eventsFor)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	return r
}

func TestGCRemovesEveryFileOfAnUnusedCircuit(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	mustUpdate(t, s, "old")
	mustUpdate(t, s, "new")
	for _, name := range []string{"old", "new"} {
		if err := s.Count(ctx, name, fusebox.Counts{Skips: 1}); err != nil {
			t.Fatal(err)
		}
	}
	age(t, dir, 8*24*time.Hour, "old.json", ".counts/old.counts")
	if r := gc(t, s, week, 100*week); !slices.Equal(r.Circuits, []string{"old"}) {
		t.Errorf("GC removed %q, want [old]", r.Circuits)
	}
	for _, f := range ls(t, dir) {
		if strings.Contains(f, "old") {
			t.Errorf("%s is left", f)
		}
	}
	if st, err := s.Load(ctx, "new"); err != nil || st.ConsecutiveFailures != 1 {
		t.Errorf("Load(new) = %+v, %v; want it kept", st, err)
	}
}

func TestGCKeepsACircuitSkippedRecently(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	mustUpdate(t, s, "db")
	if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err != nil {
		t.Fatal(err)
	}
	age(t, dir, 8*24*time.Hour, "db.json")
	if r := gc(t, s, week, 100*week); len(r.Circuits) != 0 {
		t.Errorf("GC removed %q: a circuit still skipping calls is in use", r.Circuits)
	}
}

func TestGCRemovesACircuitThatOnlyLeftALockFile(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.Update(ctx, "idle", func(*breaker.State) ([]breaker.Event, bool) { return nil, false }); err != nil {
		t.Fatal(err)
	}
	if r := gc(t, s, week, 100*week); len(r.Circuits) != 0 {
		t.Errorf("GC reported %q, want no circuit: none had state", r.Circuits)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".locks", "idle.lock")); !os.IsNotExist(err) {
		t.Errorf("lock file left (%v)", err)
	}
}

func TestGCRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	files := map[string]bool{ // file: whether GC removes it
		".db.json.tmp-4242-k3j9":                   true,
		".db.json.tmp-4243-zz":                     false, // a write in progress
		"answers/.w.json.tmp-1-a":                  true,
		"events/.db.jsonl.tmp-1-b":                 true,
		"db.json.corrupt-20200101T000000Z":         true,
		"events/db.jsonl.corrupt-20200101T000000Z": true,
		"db.json.corrupt-20300101T000000Z":         false, // moved aside an hour ago
		"notes.txt":                                false,
		".db.corrupt-1.json.tmp":                   false,
	}
	for f, removed := range files {
		writeFile(t, filepath.Join(dir, f), []byte("x"))
		switch {
		case strings.Contains(f, "tmp") && removed:
			age(t, dir, 2*time.Minute, f)
		case strings.Contains(f, "corrupt") && removed:
			age(t, dir, 8*24*time.Hour, f)
		case strings.Contains(f, "corrupt"):
			age(t, dir, time.Hour, f)
		default:
			age(t, dir, 100*week, f)
		}
	}
	age(t, dir, 10*time.Second, ".db.json.tmp-4243-zz")
	gc(t, s, week, 100*week)
	for f, removed := range files {
		if _, err := os.Lstat(filepath.Join(dir, f)); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed %v, want %v", f, os.IsNotExist(err), removed)
		}
	}
}

func TestGCRewritesALogOnlyWhenItsFirstLineIsOld(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	mustUpdate(t, s, "db")
	path := filepath.Join(dir, "events", "db.jsonl")
	before := inode(t, path)
	if r := gc(t, s, week, time.Hour); r.Events != 0 {
		t.Errorf("GC dropped %d events, want 0", r.Events)
	}
	if inode(t, path) != before {
		t.Error("GC rewrote a log with nothing to drop")
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func TestAutomaticGCRunsAtMostHourly(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	s := open(t, dir, file.WithRetention(24*time.Hour, 24*time.Hour), file.WithNow(func() time.Time { return now }))
	stale := func(name string) {
		mustUpdate(t, s, name)
		age(t, dir, 48*time.Hour, name+".json")
	}
	exists := func(name string) bool {
		_, err := os.Lstat(filepath.Join(dir, name+".json"))
		return err == nil
	}

	stale("a")
	mustUpdate(t, s, "busy") // .gc was made by the first Update: no GC
	if !exists("a") {
		t.Fatal("GC ran again within the hour")
	}
	now = now.Add(61 * time.Minute)
	mustUpdate(t, s, "busy")
	if exists("a") {
		t.Fatal("GC did not run an hour after the last")
	}
	stale("b")
	now = now.Add(30 * time.Minute)
	mustUpdate(t, s, "busy")
	if !exists("b") {
		t.Fatal("GC ran half an hour after the last")
	}
	if _, err := s.Update(ctx, "busy", func(*breaker.State) ([]breaker.Event, bool) { return nil, false }); err != nil {
		t.Fatal(err)
	}
	now = now.Add(31 * time.Minute)
	if _, err := s.Load(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	if !exists("b") {
		t.Fatal("GC ran without a write")
	}
	mustUpdate(t, s, "busy")
	if exists("b") {
		t.Fatal("GC did not run after a write an hour after the last")
	}
}
