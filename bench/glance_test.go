package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run of one scenario rewrites the glance from every section the report
// then holds: the new section's rows and the untouched ones' alike, each
// row's figure exactly its table's, and when each section was measured.
func TestTheGlanceIsGatheredFromTheSectionsAsTheyStand(t *testing.T) {
	storm := "| contender | target | measured | verdict |\n|---|---|---:|---|\n" +
		"| fusebox run | ≥5x fewer requests | 8.00x | met |\n" +
		"\n_Measured 2026-12-07 01:40 UTC on fusebox abc; nice -15._\n"
	doc := replaceSection("# Benchmarks\n\n", "glance", "stale\n")
	doc = replaceSection(doc, "storm", storm)
	doc = replaceSection(doc, "latency", "old\n")
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	latency := "| target | measured | verdict |\n|---|---:|---|\n" +
		"| `go doc \\| wc -l` ≤600 | 599 | met |\n" +
		"| floor ≤2.1x | 2.17x | **missed** |\n" +
		"\n_Measured 2026-12-07 18:40 UTC on fusebox def; load average 1.2 at its start, 1.3 at its end._\n"
	if err := updateReport(path, []string{"latency"}, map[string]string{"latency": latency}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := sectionBody(string(b), "glance")
	if !ok {
		t.Fatal("no glance section")
	}
	wantAll(t, "glance", got,
		"| storm | fusebox run: ≥5x fewer requests | 8.00x | met |",
		"| latency | `go doc \\| wc -l` ≤600 | 599 | met |",
		"| latency | floor ≤2.1x | 2.17x | **missed** |",
		"- storm: Measured 2026-12-07 01:40 UTC on fusebox abc; nice -15.",
		"- latency: Measured 2026-12-07 18:40 UTC on fusebox def; load average 1.2 at its start, 1.3 at its end.",
	)
	if strings.Contains(got, "stale") {
		t.Errorf("the old glance is still there:\n%s", got)
	}
}

// A report without glance markers gets none: the glance is where the page
// puts it, not appended.
func TestNoGlanceWhereThePageHasNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := updateReport(path, []string{"latency"}, map[string]string{"latency": "| target | measured | verdict |\n|---|---|---|\n| a | 1 | met |\n"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "bench:glance") {
		t.Errorf("a glance was added:\n%s", b)
	}
}
