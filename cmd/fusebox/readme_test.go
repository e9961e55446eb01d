package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestREADMEConfigsValidate keeps the README's config examples true: each
// yaml block must pass fusebox validate.
func TestREADMEConfigsValidate(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("no yaml blocks in the README")
	}
	dir := t.TempDir()
	for i, b := range blocks {
		cfg := filepath.Join(dir, "readme.yaml")
		if err := os.WriteFile(cfg, b[1], 0o600); err != nil {
			t.Fatal(err)
		}
		p := fbEnv(t, filepath.Join(dir, "state"), []string{"OWM_API_KEY=example", "HA_TOKEN=example"}, "validate", "--config", cfg)
		if p.Code != 0 {
			t.Errorf("README yaml block %d does not validate: %s\n%s", i+1, p.Stderr, b[1])
		}
	}
}
