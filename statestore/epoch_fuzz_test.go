package statestore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/fusebox-hq/fusebox/redis"
)

// The host's epoch file is read back exactly as written (an id Redis can
// give; any other is refused), and anything else
// in its place (a person's edit, a truncated write) reads as some epoch
// without failing: at worst one restore pass too many, or none.
func FuzzEpochFile(f *testing.F) {
	f.Add("3f2a9c0d1e4b5a6978877665544332211", int64(1733130000000), []byte("x 12\n"))
	f.Add("", int64(0), []byte(""))
	f.Add("a", int64(-1), []byte("\x00 \n\n99999999999999999999999"))
	f.Fuzz(func(t *testing.T, id string, changed int64, raw []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, ".redis-epoch")
		want := knownEpoch{id, changed}
		valid := len(id) <= redis.MaxEpochID && !strings.ContainsFunc(id, unicode.IsSpace)
		switch err := writeEpoch(path, want); {
		case valid && err != nil:
			t.Fatal(err)
		case !valid && err == nil:
			t.Fatalf("wrote an epoch with the id %q, which it cannot read back", id)
		case valid && id != "":
			if got := readEpoch(path); got != want {
				t.Fatalf("wrote %+v, read %+v", want, got)
			}
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		readEpoch(path)
	})
}
