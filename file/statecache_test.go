package file_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
)

// The states a Store keeps from its reads must never hide a write by
// anyone else: another Store, another process, a person.
func TestKeptStatesShowEveryWrite(t *testing.T) {
	t.Run("a write by another Store on the same dir is seen by the next Load", func(t *testing.T) {
		dir := t.TempDir()
		// Two writes between reads, without fsync: on ext4 the second one's
		// file may get the inode number of the file the reader read, freed by
		// the first, within one tick of a kernel's coarse timestamps (kernels
		// since 6.13 hand out finer ones to a file that was stat'ed; older
		// ones do not). The reader holds the file it read open, so its
		// number is not given away.
		reader, writer := open(t, dir), open(t, dir, file.WithFsync(false))
		for i := 2; i <= 400; i += 2 {
			mustUpdate(t, writer, "db")
			mustUpdate(t, writer, "db")
			if st, err := reader.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != i {
				t.Fatalf("Load after write %d = %d, %v", i, st.ConsecutiveFailures, err)
			}
		}
	})
	t.Run("an Update sees the write another Store made since its last read", func(t *testing.T) {
		dir := t.TempDir()
		a, b := open(t, dir), open(t, dir)
		for i := 1; i <= 50; i++ {
			s := a
			if i%2 == 0 {
				s = b
			}
			if st := mustUpdate(t, s, "db"); st.ConsecutiveFailures != i {
				t.Fatalf("update %d left %d", i, st.ConsecutiveFailures)
			}
		}
	})
	t.Run("an edit in place is seen", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir)
		mustUpdate(t, s, "db")
		if _, err := s.Load(ctx, "db"); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "db.json")
		if err := os.WriteFile(path, []byte(`{"consecutive_failures": 7}`), 0o600); err != nil { // same inode, truncated and rewritten
			t.Fatal(err)
		}
		if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 7 {
			t.Errorf("Load = %d, %v; want the 7 written in place", st.ConsecutiveFailures, err)
		}
	})
	t.Run("a removed file is a fresh state", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir)
		mustUpdate(t, s, "db")
		if _, err := s.Load(ctx, "db"); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, "db.json")); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 0 || st.Name != "db" {
			t.Errorf("Load = %+v, %v; want a fresh state", st, err)
		}
	})
	t.Run("a file replaced by a damaged one is moved aside, not hidden", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir)
		mustUpdate(t, s, "db")
		if _, err := s.Load(ctx, "db"); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "new")
		writeFile(t, tmp, []byte("{"))
		if err := os.Rename(tmp, filepath.Join(dir, "db.json")); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 0 {
			t.Errorf("Load = %+v, %v; want a fresh state after the damaged file", st, err)
		}
	})
	t.Run("a State a Load returned is the caller's to change", func(t *testing.T) {
		s := open(t, t.TempDir())
		if _, err := s.Update(ctx, "db", func(st *breaker.State) ([]breaker.Event, bool) {
			st.Probes = []breaker.Lease{{ID: "a"}}
			return nil, true
		}); err != nil {
			t.Fatal(err)
		}
		st, err := s.Load(ctx, "db")
		if err != nil || len(st.Probes) != 1 {
			t.Fatalf("Load = %+v, %v", st, err)
		}
		st.Probes[0].ID = "changed"
		if again, _ := s.Load(ctx, "db"); again.Probes[0].ID != "a" {
			t.Errorf("a change to a loaded State reached the next Load: %+v", again.Probes)
		}
	})
	t.Run("Loads racing Updates of another Store never go back", func(t *testing.T) {
		dir := t.TempDir()
		reader, writer := open(t, dir), open(t, dir)
		const writes = 100
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				seen := 0
				for seen < writes {
					st, err := reader.Load(ctx, "db")
					if err != nil || st.ConsecutiveFailures < seen {
						t.Errorf("Load = %d, %v after %d was seen", st.ConsecutiveFailures, err, seen)
						return
					}
					seen = st.ConsecutiveFailures
				}
			})
		}
		for i := 1; i <= writes; i++ {
			mustUpdate(t, writer, "db")
			if st, err := reader.Load(ctx, "db"); err != nil || st.ConsecutiveFailures < i {
				t.Fatalf("Load after write %d returned = %d, %v", i, st.ConsecutiveFailures, err)
			}
		}
		wg.Wait()
	})
	t.Run("Close lets go of the files it kept open", func(t *testing.T) {
		dir := t.TempDir()
		s, err := file.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		before := openFiles(t)
		for _, n := range []string{"a", "b", "c"} {
			mustUpdate(t, s, n)
			if _, err := s.Load(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if after := openFiles(t); after > before {
			t.Errorf("%d files open after Close, %d before the Loads", after, before)
		}
	})
}

func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
