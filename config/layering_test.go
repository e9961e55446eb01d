package config_test

import (
	"os/exec"
	"strings"
	"testing"
)

// config produces plain specs; the packages that act on them compile them.
// An import of either would tie the config loader to the HTTP client or the
// notifiers again (and every config consumer to their dependencies).
func TestConfigImportsNeitherHTTPCallNorNotify(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		switch {
		case strings.HasSuffix(dep, "/fusebox/httpcall"), strings.Contains(dep, "/fusebox/notify"):
			t.Errorf("config depends on %s; it should produce specs (package spec) that %[1]s compiles", dep)
		}
	}
}
