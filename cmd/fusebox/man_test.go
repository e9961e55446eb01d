package main

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra/doc"
)

// The man pages of docs/man are generated here, in a test, so that
// cobra/doc and its markdown renderer never link into the binary cron
// starts: `go generate ./cmd/fusebox` runs this test with -update-man.
var updateMan = flag.Bool("update-man", false, "regenerate docs/man from the command tree")

const manDir = "../../docs/man"

// manDate is the date every page carries, so that regenerating changes a
// page only when its command changes. Bump it with a release.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// writeManPages writes one page per command of the tree into dir.
func writeManPages(t *testing.T, dir string) {
	t.Helper()
	a := newApp()
	a.home = "/home/user" // no default in the tree may name the machine's
	a.getenv = func(string) string { return "" }
	root := newRootCmd(a)
	root.Version = "" // the version is the package's, not the page's
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	root.DisableAutoGenTag = true
	hdr := &doc.GenManHeader{Title: "FUSEBOX", Section: "1", Date: &manDate, Source: "fusebox", Manual: "fusebox manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		t.Fatalf("generate man pages into %s: %v", dir, err)
	}
}

func TestManPagesAreCurrent(t *testing.T) {
	if *updateMan {
		old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeManPages(t, manDir)
		return
	}
	fresh := t.TempDir()
	writeManPages(t, fresh)
	want := manPages(t, fresh)
	have := manPages(t, manDir)
	const regen = "; regenerate with: go generate ./cmd/fusebox"
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := have[name]
		switch {
		case !ok:
			t.Errorf("docs/man/%s is missing%s", name, regen)
		case got != want[name]:
			t.Errorf("docs/man/%s is stale (the command changed)%s", name, regen)
		}
	}
	for name := range have {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/man/%s has no command any more%s", name, regen)
		}
	}
	if _, ok := want["fusebox-run.1"]; !ok {
		t.Errorf("no page for fusebox run among %v", slices.Sorted(maps.Keys(want)))
	}
}

// manPages reads the *.1 files of dir, by file name.
func manPages(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(p)] = string(b)
	}
	return pages
}
