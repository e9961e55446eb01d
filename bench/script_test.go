package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClassicScriptFollowsTheIssue runs the bash baseline, scaled 60x, through
// its three paths: every attempt fails and the file is written; the next run
// skips; once the window has passed (faked by aging the file) a success
// removes it.
func TestClassicScriptFollowsTheIssue(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "md5sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	var hits atomic.Int32
	var healthy atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	run := func() int {
		cmd := exec.Command("bash", "scripts/classic-breaker.sh", "upstream", srv.URL)
		cmd.Env = append(os.Environ(), "CB_DIR="+dir, "CB_SCALE=60")
		return exitStatus(cmd.Run())
	}
	files := func() []string { m, _ := filepath.Glob(filepath.Join(dir, "cb_*")); return m }

	if code := run(); code != 1 || hits.Load() != 3 || len(files()) != 1 {
		t.Fatalf("down: exit %d after %d requests, files %v; want exit 1, 3 requests, one file", code, hits.Load(), files())
	}
	if code := run(); code != 75 || hits.Load() != 3 {
		t.Fatalf("open: exit %d, %d requests in all; want 75 and no new request", code, hits.Load())
	}
	// The scaled window is 5 s; a file written in 1970 has long expired.
	if err := os.WriteFile(files()[0], []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	healthy.Store(true)
	if code := run(); code != 0 || hits.Load() != 4 || len(files()) != 0 {
		t.Fatalf("recovered: exit %d after %d requests, files %v; want 0, 4, none", code, hits.Load(), files())
	}
}

// TestPairedScriptPrintsTheRatioOfTwoCommands runs scripts/paired.sh on two
// commands whose times differ by far more than this machine's noise: the
// ratio it prints says which is slower, and every figure has its line.
func TestPairedScriptPrintsTheRatioOfTwoCommands(t *testing.T) {
	for _, tool := range []string{"bash", "awk", "sleep", "true"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	out, err := exec.Command("bash", "scripts/paired.sh", "3", "sleep 0.05", "true").CombinedOutput()
	if err != nil {
		t.Fatalf("paired.sh: %v\n%s", err, out)
	}
	var ratio float64
	for _, want := range []string{"load before: ", "load after: ", "A median wall: ", "B median wall: "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q line in:\n%s", want, out)
		}
	}
	i := strings.Index(string(out), "paired ratios: ")
	if i < 0 {
		t.Fatalf("no ratio in:\n%s", out)
	}
	if _, err := fmt.Sscanf(string(out[i:]), "paired ratios: %gx", &ratio); err != nil || ratio < 5 {
		t.Errorf("sleep 0.05 against true: ratio %v (%v), want well above 5, in:\n%s", ratio, err, out)
	}
}
