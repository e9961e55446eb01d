package fusebox_test

import (
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dependency arrows point inward (see docs/architecture.md): the
// domain (the root, and the breaker's state machine under it) imports
// nothing else of the module but internal/human (durations for people,
// standard library only), the breaker nothing more, the stores import
// only the domain and each other's contracts, no library imports the config loader or a
// command, and the config loader builds the types the callers define.
func TestTheArrowsPointInward(t *testing.T) {
	out := goList(t, `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`)
	stores := map[string]bool{"file": true, "redis": true, "mem": true}
	seen := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := short(fields[0])
		seen++
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := short(imp)
			switch {
			case pkg == "breaker" && dep != "internal/human":
				t.Errorf("the breaker imports %s: it is standard library and internal/human only", dep)
			case pkg == "" && dep != "breaker" && dep != "internal/human":
				t.Errorf("the domain (the root) imports %s: it is the standard library, the breaker and internal/human only", dep)
			case strings.HasPrefix(dep, "cmd"):
				t.Errorf("%s imports %s: a command is wiring, never a library", pkg, dep)
			case dep == "config" && !strings.HasPrefix(pkg, "cmd/") && !strings.HasPrefix(pkg, "config/"):
				t.Errorf("%s imports config: a library takes the types config builds, not the loader", pkg)
			case stores[pkg] && dep != "" && dep != "breaker" && dep != "answers" && !strings.HasPrefix(dep, "internal/"):
				t.Errorf("store %s imports %s: a store knows only the domain's contracts", pkg, dep)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("go list listed %d packages; want the module's", seen)
	}
}

const module = "github.com/fusebox-hq/fusebox"

// short is a package's path within the module, "" for the root.
func short(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

// goList is `go list -f format ./...`.
func goList(t *testing.T, format string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", format, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return string(out)
}

// docs/architecture.md's table of what each package imports of the module
// is what `go list` says, for every package that is not a test's or an
// example's helper.
func TestTheArchitecturePageListsEachPackagesImports(t *testing.T) {
	page, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(page), "| package | imports of this module |")
	if !ok {
		t.Fatal(`docs/architecture.md: no table headed "| package | imports of this module |"`)
	}
	table, _, _ = strings.Cut(table, "\n\n")
	name := regexp.MustCompile("`([a-z/]+)`")
	names := func(cell string) []string {
		var out []string
		for _, m := range name.FindAllStringSubmatch(cell, -1) {
			out = append(out, m[1])
		}
		if strings.Contains(cell, "root") {
			out = append(out, "")
		}
		slices.Sort(out)
		return out
	}
	documented := map[string][]string{} // nil: "everything it wires", unchecked
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		pkgs := names(strings.ReplaceAll(cells[0], "`fusebox` (root)", "root"))
		imports := names(cells[1])
		if strings.Contains(cells[1], "everything") {
			imports = nil
		} else if imports == nil {
			imports = []string{}
		}
		for _, p := range pkgs {
			documented[p] = imports
		}
	}
	for line := range strings.Lines(goList(t, `{{.ImportPath}} {{len .GoFiles}}{{range .Imports}} {{.}}{{end}}`)) {
		fields := strings.Fields(line)
		pkg := short(fields[0])
		if fields[1] == "0" || pkg == "reliability" || strings.HasPrefix(pkg, "examples/") || strings.Contains(pkg+"/", "internal/") {
			continue // tests only, or a helper of tests and examples
		}
		want, ok := documented[pkg]
		delete(documented, pkg)
		if !ok {
			t.Errorf("docs/architecture.md: package %q is missing from the imports table", pkg)
			continue
		}
		if want == nil {
			continue
		}
		got := []string{}
		for _, imp := range fields[2:] {
			if strings.HasPrefix(imp, module) {
				got = append(got, short(imp))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("docs/architecture.md: %q imports %q of the module, where the page says %q", pkg, got, want)
		}
	}
	if len(documented) > 0 {
		t.Errorf("docs/architecture.md lists packages the module does not have: %q", slices.Sorted(maps.Keys(documented)))
	}
}
