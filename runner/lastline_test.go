package runner_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/runner"
)

func TestAFailureQuotesTheLastLineTheCommandWroteOnStderr(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	for _, tc := range []struct {
		name, script, want string
	}{
		{"curl's complaint", `echo "curl: (7) Failed to connect to zigbee.lan port 8080" >&2; exit 7`,
			"exit status 7: curl: (7) Failed to connect to zigbee.lan port 8080"},
		{"the last of several lines, blank ones skipped", `printf 'first\nsecond\n\n  \n' >&2; exit 3`, "exit status 3: second"},
		{"an unfinished last line", `printf 'done\nhalf a line' >&2; exit 3`, "exit status 3: half a line"},
		{"control characters become spaces", `printf 'a\rb\033[0mc\n' >&2; exit 3`, "exit status 3: a b [0mc"},
		{"a long line is capped at a rune", `echo ` + long + ` >&2; exit 3`, "exit status 3: " + strings.Repeat("é", 100) + "…"},
		{"a secret is redacted", `echo "token hunter22 refused" >&2; exit 3`, "exit status 3: token REDACTED refused"},
		{"nothing on stderr", `echo only stdout; exit 3`, "exit status 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fastPolicy())
			var stderr bytes.Buffer
			_, err := h.run(runner.Spec{Argv: sh(t.TempDir(), tc.script), Stderr: &stderr,
				Redact: func(s string) string { return strings.ReplaceAll(s, "hunter22", "REDACTED") }})
			if ee := exitError(t, err); ee.Reason != tc.want {
				t.Errorf("reason %q, want %q", ee.Reason, tc.want)
			}
			if st := h.state(); st.LastFailure != tc.want {
				t.Errorf("stored reason %q, want %q", st.LastFailure, tc.want)
			}
			events, err := h.store.Events(context.Background(), "cmd", time.Time{})
			failures := 0
			for _, e := range events {
				if e.Kind == breaker.EventFailure {
					failures++
					if e.Reason != tc.want {
						t.Errorf("event reason %q, want %q", e.Reason, tc.want)
					}
				}
			}
			if err != nil || failures == 0 {
				t.Errorf("events %+v (%v), want failures with reason %q", events, err, tc.want)
			}
			if strings.Contains(tc.script, ">&2") && stderr.Len() == 0 {
				t.Error("the command's stderr did not pass through")
			}
		})
	}
}

func TestASuccessQuotesNothingAndStderrPassesThrough(t *testing.T) {
	h := newHarness(t, fastPolicy())
	var stderr bytes.Buffer
	err := runner.Run(context.Background(), h.circuits, "cmd", runner.Spec{Argv: []string{"sh", "-c", "echo warming up >&2"}, Stderr: &stderr})
	if err != nil || stderr.String() != "warming up\n" {
		t.Errorf("Run = %v, stderr %q; want success and the line passed through", err, stderr.String())
	}
}
