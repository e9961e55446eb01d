package fusebox_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: Do must not
// leak timers or workers, whatever way a call ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
