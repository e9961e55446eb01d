package testenv

import "testing"

// The summary counts the skips by reason, the heavy suite's saying how to
// run it, and is empty when nothing was skipped.
func TestSkipSummary(t *testing.T) {
	skipped.Lock()
	saved := skipped.byReason
	skipped.byReason = nil
	skipped.Unlock()
	t.Cleanup(func() {
		skipped.Lock()
		skipped.byReason = saved
		skipped.Unlock()
	})

	if got := SkipSummary(); got != "" {
		t.Errorf("no skips: summary %q, want none", got)
	}
	recordSkip(t, heavyReason)
	recordSkip(t, heavyReason)
	recordSkip(t, "mosquitto is not installed")
	want := "testenv: 3 tests skipped (1 mosquitto is not installed; 2 heavy suite: set FUSEBOX_TEST_HEAVY=1 to run it); -v names them"
	if got := SkipSummary(); got != want {
		t.Errorf("summary\n%q, want\n%q", got, want)
	}
}
