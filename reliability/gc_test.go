package reliability

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGCKeepsATripInForce: `fusebox trip maint --for 720h`, then eight days
// with no call (the files' times moved back), then `fusebox gc` (gc_after 7
// days): the maintenance window still holds, so the job does not run in it.
// A circuit left alone as long without a trip is removed, as before.
func TestGCKeepsATripInForce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if p := fb(t, state, "trip", "--new", "maint", "--for", "720h"); p.code != 0 {
		t.Fatalf("trip: exit %d\n%s", p.code, p.stderr)
	}
	if p := fb(t, state, runArgs("idle", []string{"--attempts", "1"}, "false")...); p.code != 1 {
		t.Fatalf("failing run: exit %d\n%s", p.code, p.stderr)
	}
	eightDaysAgo := time.Now().Add(-8 * 24 * time.Hour)
	for _, name := range []string{"maint", "idle"} {
		for _, path := range []string{filepath.Join(state, name+".json"), filepath.Join(state, ".counts", name+".counts")} {
			if err := os.Chtimes(path, eightDaysAgo, eightDaysAgo); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	if p := fb(t, state, "gc"); p.code != 0 {
		t.Fatalf("gc: exit %d\n%s", p.code, p.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "idle.json")); !os.IsNotExist(err) {
		t.Errorf("the idle circuit was not removed (%v): the test did not make it look unused", err)
	}
	if st := statusOf(t, state, "maint"); st["state"] != "forced_open" {
		t.Fatalf("after gc maint is %v, want forced_open: gc removed a trip still in force", st["state"])
	}
	if p := fb(t, state, runArgs("maint", nil, "echo", "ran")...); p.code != 75 || p.stdout != "" {
		t.Errorf("the job during its maintenance window: exit %d, stdout %q; want 75 and nothing run", p.code, p.stdout)
	}
}
