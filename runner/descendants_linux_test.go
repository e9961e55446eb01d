package runner_test

import (
	"testing"

	"github.com/fusebox-hq/fusebox/runner"
)

// A descendant of the command in a session of its own (setsid) is in no
// process group a timeout signals; with EndDescendants it is ended with
// the attempt, as is a job the command left running in the background
// when it exited by itself.
func TestTheCommandsDescendantsEndWithIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		script  string
		timeout bool
	}{
		{"a setsid grandchild at a timeout", `setsid sh -c 'echo escaped $$; exec sleep 300' & wait`, true},
		{"a background job at a clean exit", `setsid sh -c 'echo escaped $$; exec sleep 300' & sleep 0.2; exit 0`, false},
		{"a grandchild's grandchild", `sh -c 'setsid sh -c "sh -c \"echo escaped \\\$\\\$; exec sleep 300\" & wait" &' ; sleep 0.3`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fastPolicy()
			p.Retry.Attempts = 1
			h := newHarness(t, p)
			out := newLines()
			ctx := newCuedDeadline()
			done := make(chan error, 1)
			go func() {
				done <- runner.Run(ctx, h.circuits, "cmd", runner.Spec{Argv: []string{"sh", "-c", tc.script}, Stdout: out, Stream: true, EndDescendants: true})
			}()
			escaped := field(t, out.next(t, "escaped "))
			exited := pidfd(t, escaped)
			if tc.timeout {
				ctx.pass()
			}
			err := <-done
			if tc.timeout {
				if ee := exitError(t, err); ee.Code != runner.ExitTimeout {
					t.Errorf("exit status %d (%s), want %d", ee.Code, ee.Reason, runner.ExitTimeout)
				}
			} else if err != nil {
				t.Errorf("Run: %v", err)
			}
			exited() // fails the test a minute on
		})
	}
}
