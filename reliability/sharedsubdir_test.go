package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestAMembersPrivateSubdirDoesNotDisarmASharedDir: member a leaves one
// of the shared dir's subdirectories 0700 (a umask of 077 and a mkdir, an
// old fusebox), which member b may not enter. b's runs used to log
// "running without circuit protection" on every run and never open the
// circuit; now the first of them moves it aside with one ERROR and makes
// it again shared, the circuit opens after two failures and then skips,
// for a too.
func TestAMembersPrivateSubdirDoesNotDisarmASharedDir(t *testing.T) {
	h := newHousehold(t)
	a, b := h.a, h.b
	policy := []string{"--attempts", "1", "--trip-after", "2"}
	for i, sub := range []string{"events", ".locks", ".counts"} {
		t.Run(sub, func(t *testing.T) {
			d := h.dir(t, fmt.Sprintf("state-%d", i))
			if p := d.run(a, testenv.RunArgs("c", nil, "true")...); p.Code != 0 {
				t.Fatalf("%s: exit %d\n%s", a.Name, p.Code, p.Stderr)
			}
			path := d.plant(sub, a, func(path string) error {
				if err := os.RemoveAll(path); err != nil {
					return err
				}
				return os.Mkdir(path, 0o700)
			})
			var stderr strings.Builder
			for i, want := range []int{1, 1, exitOpen} {
				p := d.run(b, testenv.RunArgs("c", policy, failing...)...)
				if p.Code != want {
					t.Fatalf("%s's run %d of a failing command: exit %d, want %d (the circuit opens after 2 failures, then skips)\n%s", b.Name, i+1, p.Code, want, p.Stderr)
				}
				stderr.WriteString(p.Stderr)
			}
			if p := d.run(a, testenv.RunArgs("c", policy, failing...)...); p.Code != exitOpen {
				t.Errorf("%s after %s opened c: exit %d, want %d\n%s", a.Name, b.Name, p.Code, exitOpen, p.Stderr)
			} else {
				stderr.WriteString(p.Stderr)
			}
			if strings.Contains(stderr.String(), "without circuit protection") {
				t.Errorf("a run went without circuit protection:\n%s", stderr.String())
			}
			errs := errorLines(stderr.String())
			if len(errs) != 1 || !strings.Contains(errs[0], "moved aside a file fusebox cannot use") || !strings.Contains(errs[0], "file="+path) {
				t.Errorf("want exactly one ERROR, that %s was moved aside; got:\n%s", path, stderr.String())
			}
			if moved, _ := filepath.Glob(path + ".corrupt-*"); len(moved) != 1 {
				t.Errorf("moved aside as %q, want one %s.corrupt-TIME", moved, path)
			}
			if fi, err := os.Lstat(path); err != nil || !fi.IsDir() || fi.Mode()&(os.ModePerm|os.ModeSetgid) != 0o770|os.ModeSetgid {
				t.Errorf("%s is now %v (%v), want drwxrws---", path, fi.Mode(), err)
			}
		})
	}
}
