package file_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestASharedDirOfAnotherOwnerIsAcceptedByItsGroup: a setgid,
// group-writable dir owned by another user is used when the caller is in
// its group (root's group 0 here), and what the store creates in it is
// 0660 and 2770 whatever the umask (root, in no group of its own, shares
// any); not setgid, or writable by every user, it is refused.
func TestASharedDirOfAnotherOwnerIsAcceptedByItsGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "chown to another uid needs root")
	}
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	shared := func(gid int, mode fs.FileMode) string {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 1001, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dir := shared(os.Getegid(), 0o770|fs.ModeSetgid)
	s, err := file.Open(dir)
	if err != nil {
		t.Fatalf("Open of a dir shared with my group: %v", err)
	}
	ctx := context.Background()
	if _, err := s.Update(ctx, "c", func(st *breaker.State) ([]breaker.Event, bool) {
		return []breaker.Event{{Time: time.Now(), Circuit: "c", Kind: breaker.EventFailure, Reason: "x"}}, true
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Count(ctx, "c", fusebox.Counts{Successes: 1}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c.json", "events/c.jsonl", ".counts/c.counts", ".locks/c.lock"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if fi.Mode().Perm() != 0o660 {
			t.Errorf("%s: %v, want mode 0660", name, fi.Mode())
		}
	}
	for _, name := range []string{"events", ".counts", ".locks"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if fi.Mode()&(fs.ModePerm|fs.ModeSetgid) != 0o770|fs.ModeSetgid {
			t.Errorf("%s: %v, want drwxrws---", name, fi.Mode())
		}
	}

	// Root is in no group 1001, and may write it all the same: it shares
	// every shared dir (root's cron and the .deb's fusebox user).
	if _, err := file.Open(shared(1001, 0o770|fs.ModeSetgid)); err != nil {
		t.Errorf("root's Open of a dir shared with a group it is not in: %v", err)
	}
	for _, tc := range []struct {
		name string
		gid  int
		mode fs.FileMode
	}{
		{"group-writable but not setgid", os.Getegid(), 0o770},
		{"setgid but writable by every user", os.Getegid(), 0o777 | fs.ModeSetgid},
	} {
		_, err := file.Open(shared(tc.gid, tc.mode))
		var unsafe *file.UnsafeDirError
		if !errors.As(err, &unsafe) {
			t.Errorf("%s: Open = %v, want an *UnsafeDirError", tc.name, err)
		}
	}
}

func TestInitSharedMakesADirUsedAloneShared(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Count(context.Background(), "c", fusebox.Counts{Successes: 1}); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/etc/passwd", filepath.Join(dir, "planted"))
	if err := file.InitShared(dir, os.Getegid()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{".": 0o770 | fs.ModeSetgid, ".counts": 0o770 | fs.ModeSetgid, ".counts/c.counts": 0o660} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if fi.Mode()&(fs.ModePerm|fs.ModeSetgid) != want {
			t.Errorf("%s: %v, want %v", name, fi.Mode(), want)
		}
	}
	if fi, _ := os.Stat("/etc/passwd"); fi.Mode().Perm() == 0o660 {
		t.Error("InitShared followed a symlink")
	}
}
