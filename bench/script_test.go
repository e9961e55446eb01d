package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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
