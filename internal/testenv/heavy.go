package testenv

import (
	"os"
	"testing"
)

// HeavyVar, when set (.ci/run sets it), runs the heavy suites: hundreds of
// processes, the real Node-RED, n8n and dpkg, the soak. Without it a plain
// `go test ./...` skips them, visibly, and stays quick and harmless.
const HeavyVar = "FUSEBOX_TEST_HEAVY"

// Heavy skips t unless HeavyVar is set. It is a plain skip, never a failure
// under NoSkipVar: a heavy suite left out is a choice, not a missing service.
func Heavy(t testing.TB) {
	t.Helper()
	if !HeavyOn() {
		recordSkip(t, heavyReason)
		t.Skipf("SKIP heavy suite: set %s=1 to run it (.ci/run does)", HeavyVar)
	}
}

// HeavyOn reports whether HeavyVar is set: a test that runs a small case
// of its behaviour in the quick run and the full size in the heavy suite
// (500 kills instead of 50) asks it.
func HeavyOn() bool { return os.Getenv(HeavyVar) != "" }
