package redistest

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// Saturate keeps every core of the machine busy for the rest of the test:
// one shell busy-looping per CPU, niced like any other work, started here
// and stopped by PID at cleanup. With FUSEBOX_TEST_HOG set (.ci/run's hog
// phase already saturates the machine) it starts nothing.
func Saturate(t testing.TB) {
	t.Helper()
	if os.Getenv("FUSEBOX_TEST_HOG") != "" {
		return
	}
	for range runtime.NumCPU() {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start a CPU burner: %v", err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}
