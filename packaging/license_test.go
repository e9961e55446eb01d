package packaging_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The Node-RED package and the add-on repository are published apart from
// the checkout (an npm tarball, a git repository of its own), so each holds
// LICENSE and NOTICE as files: npm packs no symlink, and a link out of the
// add-on's repository would dangle. They must stay the root's.
var licenseCopies = []string{"node-red-fusebox", "ha-addon"}

// TestEveryPublishedFolderCarriesTheLicense checks each folder published on
// its own against the root's LICENSE and NOTICE, the Node-RED package's
// SPDX id, and what npm pack puts in its tarball.
func TestEveryPublishedFolderCarriesTheLicense(t *testing.T) {
	for _, dir := range licenseCopies {
		for _, f := range []string{"LICENSE", "NOTICE"} {
			want, err := os.ReadFile(filepath.Join("..", f))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(got) != string(want) {
				t.Errorf("%s/%s is not the root's %s (%v): cp %s %s/", dir, f, f, err, f, dir)
			}
		}
	}
	var pkg struct {
		License string `json:"license"`
	}
	b, err := os.ReadFile("node-red-fusebox/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.License != "Apache-2.0" {
		t.Errorf("node-red-fusebox/package.json: license %q (%v), want Apache-2.0", pkg.License, err)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		testenv.Skip(t, "npm is not installed: cannot list what npm pack puts in the Node-RED package")
	}
	cmd := exec.Command("npm", "pack", "--dry-run", "--json", "--ignore-scripts")
	cmd.Dir = "node-red-fusebox"
	cmd.Env = append(os.Environ(), "npm_config_cache="+t.TempDir(), "npm_config_offline=true")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm pack --dry-run: %v\n%s", err, out)
	}
	var packed []struct {
		Files []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	if err := json.Unmarshal(out, &packed); err != nil || len(packed) != 1 {
		t.Fatalf("npm pack --json printed %s (%v)", out, err)
	}
	var paths []string
	for _, f := range packed[0].Files {
		paths = append(paths, f.Path)
	}
	for _, want := range []string{"LICENSE", "NOTICE"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the Node-RED package's tarball lacks %s: %v", want, paths)
		}
	}
}
