package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// holdLock takes the flock on path the way another process would, and
// returns what releases it.
func holdLock(t *testing.T, path string) (release func()) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func() { f.Close() }
}

func TestUpdateGivesUpAfterTheLockTimeout(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, file.WithLockTimeout(500*time.Millisecond))
	release := holdLock(t, filepath.Join(dir, ".locks", "db.lock"))
	start := time.Now()
	_, err := s.Update(ctx, "db", succeed)
	if err == nil || err.Error() != "lock db: timed out after 500ms" {
		t.Fatalf("Update = %v, want lock db: timed out after 500ms", err)
	}
	if d := time.Since(start); d > 5*time.Second { // a held lock would keep it forever
		t.Errorf("Update gave up after %s", d)
	}
	release()
	if st := mustUpdate(t, s, "db"); st.ConsecutiveFailures != 1 {
		t.Errorf("Update after the lock came free stored %+v", st)
	}
}

func TestUpdateGivesUpWhenCtxIsDone(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	holdLock(t, filepath.Join(dir, ".locks", "db.lock"))
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := s.Update(cctx, "db", succeed); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update = %v, want context.DeadlineExceeded", err)
	}
}

func TestRepeatedTimeoutsLeaveOneWaitingFlock(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, file.WithLockTimeout(20*time.Millisecond))
	holdLock(t, filepath.Join(dir, ".locks", "db.lock"))
	if _, err := s.Update(ctx, "db", succeed); err == nil {
		t.Fatal("Update succeeded under a held lock")
	}
	before := runtime.NumGoroutine()
	for range 10 {
		if _, err := s.Update(ctx, "db", succeed); err == nil {
			t.Fatal("Update succeeded under a held lock")
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines grew from %d to %d over 10 timed-out updates", before, after)
	}
}

// TestLockFileRemovedWhileWaitedOn: GC removes a lock file while holding it.
// A process waiting on the removed file must not trust the lock it then
// gets, since a newcomer may hold the new file at the same path.
func TestLockFileRemovedWhileWaitedOn(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	path := filepath.Join(dir, ".locks", "db.lock")
	releaseOld := holdLock(t, path)
	done := make(chan error, 1)
	go func() {
		_, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			st.ConsecutiveFailures++
			return nil, true
		})
		done <- err
	}()
	old := lockID(t, path)
	waitForWaiter(t, old, done)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	releaseNew := holdLock(t, path)
	releaseOld()
	// The Update gets the old file's lock, must see that it is gone, and
	// wait on the new file instead.
	waitForWaiter(t, lockID(t, path), done)
	releaseNew()
	if err := <-done; err != nil {
		t.Fatalf("Update: %v", err)
	}
	if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 1 {
		t.Errorf("Load = %+v, %v; want 1 success", st, err)
	}
}

// lockID names the file at path as /proc/locks does: MAJOR:MINOR:INODE.
func lockID(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
}

// waitForWaiter waits until /proc/locks shows a request blocked on the
// flock of the file id names, failing the test if the update is done first:
// it went ahead instead of waiting.
func waitForWaiter(t *testing.T, id string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		locks, err := os.ReadFile("/proc/locks")
		if err != nil {
			testenv.Skip(t, "this test watches flock waiters in /proc/locks: %v", err)
		}
		for line := range strings.Lines(string(locks)) {
			// 1: -> FLOCK  ADVISORY  WRITE 4242 fe:00:9977958 0 EOF
			f := strings.Fields(line)
			if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && f[6] == id {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("Update went ahead (%v) while the lock file %s was held", err, id)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request waited on the flock of %s within 10s", id)
		}
	}
}
