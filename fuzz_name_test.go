package fusebox_test

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/fusebox-hq/fusebox"
)

// FuzzValidateName checks that a name ValidateName accepts is a plain file
// name that stays inside the state dir, that it accepts exactly the names
// the README promises ([A-Za-z0-9._-], 1 to 64 characters, not . or ..), and
// that its error, which fusebox prints, is one short line without control
// characters whatever the name holds.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"zigbee2mqtt", "a", ".", "..", "...", ".hidden", "a/b", "../x", "a\x00b", "a b",
		strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 40), "\x1b[31mred", "tab\t", "名前", "-", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := fusebox.ValidateName(name)
		if (err == nil) != wantValid(name) {
			t.Fatalf("ValidateName(%q) = %v; the README's rule says valid = %v", name, err, wantValid(name))
		}
		if err == nil {
			const dir = "/var/lib/fusebox"
			for _, suffix := range []string{".json", ".jsonl", ".lock", ".skips"} {
				p := filepath.Join(dir, "events", name+suffix)
				if filepath.Base(p) != name+suffix || filepath.Dir(p) != filepath.Join(dir, "events") {
					t.Fatalf("name %q makes the path %s, outside its dir", name, p)
				}
			}
			return
		}
		msg := err.Error()
		if len(msg) > 400 {
			t.Errorf("error for a %d-byte name is %d bytes long", len(name), len(msg))
		}
		for _, r := range msg {
			if unicode.IsControl(r) {
				t.Fatalf("error %q holds the control character %U", msg, r)
			}
		}
	})
}

func wantValid(name string) bool {
	if len(name) < 1 || len(name) > fusebox.MaxNameLen || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", rune(c)) {
			return false
		}
	}
	return true
}
