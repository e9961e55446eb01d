package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/doctext"
)

// TestDocsConfigsValidate keeps the config examples of README.md and
// docs/*.md true: each yaml block must pass fusebox validate, and warn of
// nothing.
func TestDocsConfigsValidate(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for _, page := range doctext.Pages(t) {
		for i, b := range doctext.Fenced(t, page, "yaml") {
			n++
			cfg := filepath.Join(dir, "doc.yaml")
			if err := os.WriteFile(cfg, []byte(b), 0o600); err != nil {
				t.Fatal(err)
			}
			p := fbEnv(t, filepath.Join(dir, "state"), []string{"OWM_API_KEY=example", "HA_TOKEN=example"}, "validate", "--config", cfg)
			if p.Code != 0 || p.Stderr != "" {
				t.Errorf("%s yaml block %d does not validate without a warning: %s\n%s", page, i+1, p.Stderr, b)
			}
		}
	}
	if n == 0 {
		t.Fatal("no yaml blocks in README.md or docs/")
	}
}
