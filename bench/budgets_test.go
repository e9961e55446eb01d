package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/config"
)

// TestBudgetsConfigIsTheShippedExampleOnTheStandIns: the scenario runs the
// example config as shipped, a valid config whose every URL is a stand-in.
func TestBudgetsConfigIsTheShippedExampleOnTheStandIns(t *testing.T) {
	dir := t.TempDir()
	if err := budgetsConfig(&tools{repo: ".."}, dir, "http://127.0.0.1:1", "http://127.0.0.1:2"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	wantAll(t, "config", got, "url: http://127.0.0.1:1/api", "url: http://127.0.0.1:1/data/2.5/weather?q=Berlin",
		"url: http://127.0.0.1:2/Berlin?format=j1", "deadline: 20s", "attempts: 2")
	if strings.Contains(got, "https://") || strings.Contains(got, "fresh:") {
		t.Errorf("an API or the chain's fresh: is left:\n%s", got)
	}
	c, err := config.Load(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatalf("the scenario's config does not load: %v", err)
	}
	for _, name := range []string{"hang", "openweather", "wttr", "ha"} {
		if _, ok := c.Circuits[name]; !ok {
			t.Errorf("circuit %s is missing", name)
		}
	}
}
