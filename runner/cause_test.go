package runner_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/runner"
)

// A failed command is stored as a failure of kind exit; one cut by its
// timeout, of kind timeout.
func TestCommandFailuresAreStoredWithTheirCause(t *testing.T) {
	for _, tt := range []struct {
		name    string
		argv    []string
		timeout time.Duration
		cause   breaker.Cause
	}{
		{"a command that exits 3", []string{"sh", "-c", "exit 3"}, 10 * time.Second, runner.CauseExit},
		{"a command cut by its timeout", []string{"sleep", "30"}, 50 * time.Millisecond, breaker.CauseTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fusebox.Policy{Retry: fusebox.RetryPolicy{Attempts: 1, Timeout: tt.timeout}})
			if _, err := h.run(runner.Spec{Argv: tt.argv, Stderr: io.Discard}); err == nil {
				t.Fatal("the command succeeded")
			}
			events, _ := h.store.Events(context.Background(), "cmd", time.Time{})
			if len(events) != 1 || events[0].Cause != tt.cause {
				t.Errorf("events %+v, want one failure of cause %s", events, tt.cause)
			}
		})
	}
}
