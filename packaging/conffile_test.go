package packaging_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestTheConffilesExampleValidatesUncommented checks both states of the
// .deb's /etc/fusebox/config.yaml a user meets: as shipped (the units start
// with it) and with its commented example uncommented, which is what a user
// does first, so that the example keeps up with the config's keys.
func TestTheConffilesExampleValidatesUncommented(t *testing.T) {
	b, err := os.ReadFile("deb/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example is the commented block from the first line that is YAML
	// at column 0 once "# " is taken off; the prose above it is not YAML.
	var example strings.Builder
	started := false
	for line := range strings.Lines(string(b)) {
		text, ok := strings.CutPrefix(line, "# ")
		if !ok {
			text, ok = strings.CutPrefix(line, "#")
		}
		if !ok {
			t.Fatalf("deb/config.yaml has a line that is not a comment: %q", line)
		}
		started = started || strings.HasPrefix(text, "defaults:") || strings.HasPrefix(text, "circuits:")
		if started {
			example.WriteString(text)
		}
	}
	if !strings.Contains(example.String(), "circuits:") {
		t.Fatal("deb/config.yaml has no commented circuits: example")
	}
	dir := t.TempDir()
	uncommented := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(uncommented, []byte(example.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{"deb/config.yaml", uncommented} {
		out, err := testenv.FuseboxCmd(fuseboxBin, filepath.Join(dir, "state"), nil, "validate", "--config", cfg).CombinedOutput()
		if err != nil {
			t.Errorf("fusebox validate --config %s: %v\n%s", cfg, err, out)
		}
	}
}
