package fusebox_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The dependency arrows point inward (see docs/architecture.md): the
// domain imports nothing of the module, the stores import only the domain
// and each other's contracts, no library imports the config loader or a
// command, and the config loader builds the types the callers define.
func TestTheArrowsPointInward(t *testing.T) {
	const mod = "github.com/fusebox-hq/fusebox"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	short := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, mod), "/") }
	stores := map[string]bool{"file": true, "redis": true, "mem": true}
	seen := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := short(fields[0])
		seen++
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			dep := short(imp)
			switch {
			case pkg == "":
				t.Errorf("the domain (the root) imports %s: it is standard library only", dep)
			case strings.HasPrefix(dep, "cmd"):
				t.Errorf("%s imports %s: a command is wiring, never a library", pkg, dep)
			case dep == "config" && !strings.HasPrefix(pkg, "cmd/") && !strings.HasPrefix(pkg, "config/"):
				t.Errorf("%s imports config: a library takes the types config builds, not the loader", pkg)
			case stores[pkg] && dep != "" && dep != "answers" && !strings.HasPrefix(dep, "internal/"):
				t.Errorf("store %s imports %s: a store knows only the domain's contracts", pkg, dep)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list listed %d packages; want the module's", seen)
	}
}
