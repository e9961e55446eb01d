package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// lstatJoin sees what unix.Lstat sees, for paths that fit its buffer and
// paths that do not, and fails the same way on a missing file and a symlink
// is not followed.
func TestLstatJoinIsLstat(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("d", 200)
	deep := filepath.Join(dir, long, long, long)
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, deep} {
		if err := os.WriteFile(filepath.Join(d, "a.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("a.json", filepath.Join(d, "l.json")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a", "l", "missing"} {
			var want, got unix.Stat_t
			werr := unix.Lstat(d+"/"+name+".json", &want)
			gerr := lstatJoin(&got, d+"/", name, ".json")
			if gerr != werr || got != want {
				t.Errorf("%d-byte dir, %s: lstatJoin gave %v %+v, unix.Lstat %v %+v", len(d), name, gerr, got, werr, want)
			}
		}
	}
}

// A NUL in the path is refused, as unix.Lstat refuses it, and never cuts
// the path short.
func TestLstatJoinRefusesNUL(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	want := unix.Lstat(dir+"/a.json\x00x.json", &st)
	if got := lstatJoin(&st, dir+"/", "a.json\x00x", ".json"); got != want || got == nil {
		t.Fatalf("lstatJoin with a NUL: %v; unix.Lstat: %v", got, want)
	}
}
