package doctext

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFencedTakesExactInfoAndDropsAListItemsIndent(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "page.md"), []byte("```yaml\na: 1\n```\n```yaml prometheus\nb: 2\n```\n- item\n\n  ```yaml\n  c:\n    d: 3\n  ```\n"), 0o600)
	t.Chdir(dir)
	if got, want := Fenced(t, "page.md", "yaml"), []string{"a: 1\n", "c:\n  d: 3\n"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Fenced yaml: %q, want %q", got, want)
	}
	if got := Block(t, "page.md", "yaml prometheus", "b:"); got != "b: 2\n" {
		t.Errorf("Block yaml prometheus: %q", got)
	}
}
