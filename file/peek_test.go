package file_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox"
)

func TestPeekReportsDamageAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	path := filepath.Join(dir, "nas.json")
	for _, c := range []struct{ name, content string }{
		{"not JSON", "{garbage"},
		{"over 1 MiB", `{"name":"nas"}` + string(make([]byte, 2<<20))},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			st, _, err := s.Peek(ctx, "nas")
			if !errors.Is(err, fusebox.ErrDamaged) || st.Name != "nas" || st.Phase != "" {
				t.Fatalf("Peek = %+v, %v; want a fresh state and ErrDamaged", st, err)
			}
			entries, _ := os.ReadDir(dir)
			if b, _ := os.ReadFile(path); string(b) != c.content || len(entries) != 1 {
				t.Errorf("after Peek the dir holds %d entries, nas.json %q; want it untouched and alone", len(entries), b)
			}
		})
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Peek(ctx, "nas"); err != nil || st.Name != "nas" {
		t.Errorf("Peek of a missing state = %+v, %v; want a fresh state", st, err)
	}
}

// Peek's counts and PeekNames are what explain's check of a name reads: a
// counters file Counts would move aside is reported and left there.
func TestPeekReportsUnusableCountersAndChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	path := filepath.Join(dir, ".counts", "nas.counts")
	if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", path); err != nil {
		t.Fatal(err)
	}
	st, c, err := s.Peek(ctx, "nas")
	if !errors.Is(err, fusebox.ErrDamaged) || !strings.Contains(err.Error(), path) || st.Name != "nas" || c != (fusebox.Counts{}) {
		t.Fatalf("Peek = %+v, %+v, %v; want a fresh state, zero counts and ErrDamaged naming %s", st, c, err, path)
	}
	if names, err := s.PeekNames(ctx); err != nil || !slices.Equal(names, []string{"nas"}) {
		t.Errorf("PeekNames = %q, %v; want nas, listed by its counters file", names, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if target, err := os.Readlink(path); err != nil || target != "elsewhere" || len(entries) != 1 {
		t.Errorf("after Peek the counters dir holds %d entries, the link %q, %v; want it untouched and alone", len(entries), target, err)
	}
}
