package file_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestOpenCreatesAMissingDir0700(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	open(t, dir)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir after Open: %v, %v; want a dir with mode 0700", fi, err)
	}
}

func TestOpenRefusesUnsafeDirs(t *testing.T) {
	// The sticky bit stops others removing our files, not planting their
	// own, such as a symlink where a subdirectory is yet to be made.
	for _, mode := range []os.FileMode{0o777, 0o773, 0o702, 0o777 | os.ModeSticky, 0o703 | os.ModeSticky} {
		t.Run(fmt.Sprintf("world-writable %s", mode|os.ModeDir), func(t *testing.T) {
			dir := t.TempDir()
			chmod(t, dir, mode)
			_, err := file.Open(dir)
			var unsafe *file.UnsafeDirError
			if !errors.As(err, &unsafe) {
				t.Fatalf("Open = %v, want an *UnsafeDirError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, dir) || !strings.Contains(msg, "chmod o-w") || !strings.Contains(msg, "--state DIR") || strings.Contains(msg, "\n") {
				t.Errorf("error %q should be one line naming the dir and what to do", msg)
			}
			if mode&os.ModeSticky != 0 && !strings.Contains(msg, "sticky bit still lets anyone plant files") {
				t.Errorf("error %q should say why the sticky bit is not enough", msg)
			}
			if got := ls(t, dir); len(got) > 0 {
				t.Errorf("Open wrote %q to a refused dir", got)
			}
		})
	}
	t.Run("owned by another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testenv.Skip(t, "chown to another uid needs root")
		}
		dir := t.TempDir()
		if err := os.Chown(dir, 1001, 1001); err != nil {
			t.Fatal(err)
		}
		_, err := file.Open(dir)
		var unsafe *file.UnsafeDirError
		if !errors.As(err, &unsafe) || unsafe.Owner != 1001 {
			t.Fatalf("Open = %v, want an *UnsafeDirError naming uid 1001", err)
		}
		want := fmt.Sprintf("state dir %s is owned by uid 1001, not by you (uid 0): refusing it; use a dir you own (--state DIR), or share it with a group of yours (fusebox state init --group GROUP DIR)", dir)
		if err.Error() != want {
			t.Errorf("error\n %s\nwant\n %s", err, want)
		}
	})
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestUnusableDirIsAnError(t *testing.T) {
	t.Run("no dir at all", func(t *testing.T) {
		if _, err := file.Open(""); err == nil {
			t.Error(`Open("") succeeded`)
		}
	})
	t.Run("a file where the dir should be", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "state")
		writeFile(t, f, nil)
		for _, dir := range []string{f, filepath.Join(f, "sub")} {
			_, err := file.Open(dir)
			var unsafe *file.UnsafeDirError
			if err == nil || errors.As(err, &unsafe) {
				t.Errorf("Open(%s) = %v, want an ordinary error", dir, err)
			}
		}
	})
	t.Run("a file where a subdir should be", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir)
		mustUpdate(t, s, "db")
		for _, sub := range []string{".locks", ".counts", "answers"} {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, sub), nil)
		}
		if _, err := s.Update(ctx, "db", succeed); err == nil {
			t.Error("Update succeeded without a lock dir")
		}
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err == nil {
			t.Error("Count succeeded without a skips dir")
		}
		if err := s.SaveAnswer(ctx, "weather", answers.Answer{}); err == nil {
			t.Error("SaveAnswer succeeded without an answers dir")
		}
		if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 1 {
			t.Errorf("Load = %+v, %v; want the stored state: it needs no lock", st, err)
		}
	})
	t.Run("a read-only dir", func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir)
		defer s.Close() // before the unmount: the files it holds open keep the mount busy
		mustUpdate(t, s, "db")
		writeFile(t, filepath.Join(dir, "damaged.json"), []byte("{"))
		readOnly(t, dir)
		if _, err := s.Update(ctx, "db", succeed); err == nil {
			t.Error("Update succeeded")
		}
		if err := s.Count(ctx, "db", fusebox.Counts{Skips: 1}); err == nil {
			t.Error("Count succeeded")
		}
		// A missing file it may not create is the dir's problem, not a file
		// to move aside.
		if err := s.Count(ctx, "new", fusebox.Counts{Skips: 1}); err == nil || strings.Contains(err.Error(), "moved aside") {
			t.Errorf("Count of a new circuit = %v, want the dir's own error", err)
		}
		if _, err := s.Update(ctx, "new", succeed); err == nil || strings.Contains(err.Error(), "moved aside") {
			t.Errorf("Update of a new circuit = %v, want the dir's own error", err)
		}
		if err := s.SaveAnswer(ctx, "weather", answers.Answer{}); err == nil {
			t.Error("SaveAnswer succeeded")
		}
		if _, err := file.Open(filepath.Join(dir, "missing")); err == nil {
			t.Error("Open of a dir it cannot create succeeded")
		}
		if st, err := s.Load(ctx, "db"); err != nil || st.ConsecutiveFailures != 1 {
			t.Errorf("Load = %+v, %v; want the stored state", st, err)
		}
		if _, err := s.Load(ctx, "damaged"); err == nil {
			t.Error("Load of a damaged file it cannot move aside succeeded")
		}
	})
}

// readOnly makes dir read-only: by its mode for an ordinary user, by a
// read-only bind mount for root, whom modes do not stop.
func readOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		chmod(t, dir, 0o500)
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
		return
	}
	bindReadOnly(t, dir)
}
