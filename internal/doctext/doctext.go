// Package doctext reads the repository's own pages (README.md and
// docs/*.md) for the tests that run their examples as written: a test
// names the page and a marker, not a line number, so an example may move
// within its page and still be run.
package doctext

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Root returns the repository's root: the nearest directory above the
// test's working directory that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// Pages returns the pages a user reads, as paths from the root:
// README.md, then docs/*.md.
func Pages(t testing.TB) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(Root(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, p := range docs {
		pages = append(pages, filepath.ToSlash(filepath.Join("docs", filepath.Base(p))))
	}
	return pages
}

// Read returns the text of page, a path from the root.
func Read(t testing.TB, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Fenced returns the bodies of page's fenced blocks whose info string is
// exactly info ("yaml", "sh", "yaml prometheus"), in page order. A block
// indented under a list item loses its fence's indentation, as a renderer
// shows it.
func Fenced(t testing.TB, page, info string) []string {
	t.Helper()
	var (
		blocks []string
		body   strings.Builder
		open   bool   // inside a fence
		keep   bool   // and it is one of info's
		indent string // the open fence's
	)
	for line := range strings.Lines(Read(t, page)) {
		text := strings.TrimRight(line, "\n")
		rest := strings.TrimLeft(text, " \t")
		switch {
		case !open && strings.HasPrefix(rest, "```"):
			open, keep, indent = true, rest[3:] == info, text[:len(text)-len(rest)]
			body.Reset()
		case open && rest == "```":
			if keep {
				blocks = append(blocks, body.String())
			}
			open = false
		case open && keep:
			body.WriteString(strings.TrimPrefix(text, indent) + "\n")
		}
	}
	return blocks
}

// Block returns the first of page's fenced blocks with info string info
// whose text contains marker, and fails the test when there is none.
func Block(t testing.TB, page, info, marker string) string {
	t.Helper()
	for _, b := range Fenced(t, page, info) {
		if strings.Contains(b, marker) {
			return b
		}
	}
	t.Fatalf("no ```%s block with %q in %s", info, marker, page)
	return ""
}
