package reliability

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestGCKeepsATripInForce: `fusebox trip maint --for 720h`, then eight days
// with no call (the files' times moved back), then `fusebox gc` (gc_after 7
// days): the maintenance window still holds, so the job does not run in it.
// A circuit left alone as long without a trip is removed, as before.
func TestGCKeepsATripInForce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if p := fb(t, state, "trip", "--new", "maint", "--for", "720h"); p.Code != 0 {
		t.Fatalf("trip: exit %d\n%s", p.Code, p.Stderr)
	}
	if p := fb(t, state, testenv.RunArgs("idle", []string{"--attempts", "1"}, "false")...); p.Code != 1 {
		t.Fatalf("failing run: exit %d\n%s", p.Code, p.Stderr)
	}
	eightDaysAgo := time.Now().Add(-8 * 24 * time.Hour)
	for _, name := range []string{"maint", "idle"} {
		for _, path := range []string{filepath.Join(state, name+".json"), filepath.Join(state, ".counts", name+".counts")} {
			if err := os.Chtimes(path, eightDaysAgo, eightDaysAgo); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	if p := fb(t, state, "gc"); p.Code != 0 {
		t.Fatalf("gc: exit %d\n%s", p.Code, p.Stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "idle.json")); !os.IsNotExist(err) {
		t.Errorf("the idle circuit was not removed (%v): the test did not make it look unused", err)
	}
	if st := statusOf(t, state, "maint"); st["state"] != "forced_open" {
		t.Fatalf("after gc maint is %v, want forced_open: gc removed a trip still in force", st["state"])
	}
	if p := fb(t, state, testenv.RunArgs("maint", nil, "echo", "ran")...); p.Code != 75 || p.Stdout != "" {
		t.Errorf("the job during its maintenance window: exit %d, stdout %q; want 75 and nothing run", p.Code, p.Stdout)
	}
}
