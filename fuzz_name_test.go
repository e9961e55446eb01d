package fusebox_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/fusebox-hq/fusebox"
)

// FuzzValidateName checks properties of the names ValidateName accepts,
// without restating its rule: an accepted name is 1 to MaxNameLen bytes, a
// plain file name that stays inside the state dir, printed as it is (no
// quoting, escaping or space, nothing a shell reads specially); the names
// it accepts are closed under taking a prefix (but . and ..) and under
// doubling within the length bound; and its error, which fusebox prints, is
// one short line without control characters whatever the name holds.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"zigbee2mqtt", "a", ".", "..", "...", ".hidden", "a/b", "../x", "a\x00b", "a b",
		strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 40), "\x1b[31mred", "tab\t", "名前", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := fusebox.ValidateName(name)
		if err != nil {
			msg := err.Error()
			if len(msg) > 400 {
				t.Errorf("error for a %d-byte name is %d bytes long", len(name), len(msg))
			}
			for _, r := range msg {
				if unicode.IsControl(r) {
					t.Fatalf("error %q holds the control character %U", msg, r)
				}
			}
			return
		}
		if len(name) == 0 || len(name) > fusebox.MaxNameLen || name == "." || name == ".." {
			t.Fatalf("accepted %q, %d bytes", name, len(name))
		}
		const dir = "/var/lib/fusebox"
		for _, suffix := range []string{".json", ".jsonl", ".lock", ".skips"} {
			p := filepath.Join(dir, "events", name+suffix)
			if filepath.Base(p) != name+suffix || filepath.Dir(p) != filepath.Join(dir, "events") {
				t.Fatalf("name %q makes the path %s, outside its dir", name, p)
			}
		}
		if strconv.Quote(name) != `"`+name+`"` || strings.ContainsAny(name, " /\\$`'\"*?[]{}()<>|&;#~!=%^,:@+") {
			t.Fatalf("accepted %q, which cannot be printed or typed as it is", name)
		}
		for i := 1; i < len(name); i++ {
			if p := name[:i]; p != "." && p != ".." && fusebox.ValidateName(p) != nil {
				t.Fatalf("accepted %q but not its prefix %q: %v", name, p, fusebox.ValidateName(p))
			}
		}
		if d := name + name; len(d) <= fusebox.MaxNameLen && fusebox.ValidateName(d) != nil {
			t.Fatalf("accepted %q but not %q: %v", name, d, fusebox.ValidateName(d))
		}
	})
}
