package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplaceSectionKeepsTheProse(t *testing.T) {
	doc := replaceSection("# Benchmarks\n\nProse before.\n", "storm", "old table\n")
	doc += "\nProse after.\n"
	doc = replaceSection(doc, "storm", "new table")
	if strings.Contains(doc, "old table") || !strings.Contains(doc, "new table\n") {
		t.Errorf("section not replaced:\n%s", doc)
	}
	for _, prose := range []string{"Prose before.", "Prose after."} {
		if !strings.Contains(doc, prose) {
			t.Errorf("lost %q:\n%s", prose, doc)
		}
	}
	if n := strings.Count(doc, "bench:storm:begin"); n != 1 {
		t.Errorf("%d storm sections, want 1", n)
	}
}

func TestReplaceSectionLeavesOtherSections(t *testing.T) {
	doc := replaceSection(replaceSection("", "storm", "storm figures"), "jitter", "jitter figures")
	doc = replaceSection(doc, "jitter", "jitter again")
	if !strings.Contains(doc, "storm figures") || !strings.Contains(doc, "jitter again") || strings.Contains(doc, "jitter figures") {
		t.Errorf("got:\n%s", doc)
	}
}

func TestUpdateReportCreatesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := updateReport(path, []string{"machine", "storm"}, map[string]string{"machine": "m", "storm": "s"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.HasPrefix(doc, "# Benchmarks") || strings.Index(doc, "machine:begin") > strings.Index(doc, "storm:begin") {
		t.Errorf("got:\n%s", doc)
	}
}

func TestMdTable(t *testing.T) {
	got := mdTable([]string{"a", "b"}, "lr", [][]string{{"x|y", "1"}})
	want := "| a | b |\n|---|---:|\n| x\\|y | 1 |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestQuantileNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	if got := median(ds); got != 50 {
		t.Errorf("median = %d, want 50", got)
	}
	if got := p99(ds); got != 99 {
		t.Errorf("p99 = %d, want 99", got)
	}
	if ds[0] != 100 {
		t.Error("quantile sorted its argument")
	}
	if got := p99(nil); got != 0 {
		t.Errorf("p99(nil) = %d", got)
	}
}
