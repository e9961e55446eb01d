package httpcall_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Every stored failure carries its kind (breaker.Cause), set where it is
// judged, so that nothing downstream reads reasons to group failures.
func TestFailuresAreStoredWithTheirCause(t *testing.T) {
	tests := []struct {
		name  string
		url   func(t *testing.T) string
		edit  func(*httpcall.Endpoint)
		cause breaker.Cause
	}{
		{"a 503", func(t *testing.T) string { return serve(t, status(503, "down")).URL }, nil, httpcall.CauseStatus5xx},
		{"a 429", func(t *testing.T) string { return serve(t, status(429, "slow down")).URL }, nil, httpcall.CauseStatus429},
		{"a 404", func(t *testing.T) string { return serve(t, status(404, "nope")).URL }, nil, httpcall.CauseStatus4xx},
		{"a refused connection", func(t *testing.T) string { return fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)) }, nil, httpcall.CauseConnect},
		{"no answer in time", func(t *testing.T) string { return "http://" + silentServer(t) },
			func(e *httpcall.Endpoint) { e.Policy.Retry.Timeout = 50 * time.Millisecond }, breaker.CauseTimeout},
		{"a body over max_body", func(t *testing.T) string { return serve(t, status(200, "0123456789")).URL },
			func(e *httpcall.Endpoint) { e.MaxBody = 4 }, httpcall.CauseBody},
		{"expect.jq false", func(t *testing.T) string { return serve(t, status(200, `{"ok":false}`)).URL },
			func(e *httpcall.Endpoint) { e.Expect.JQ = httpcall.JQSource(".ok") }, httpcall.CauseCheck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", tt.url(t), func(e *httpcall.Endpoint) {
				e.Policy.Retry.Attempts = 1
				// Time enough for a busy machine: only the silent server's
				// case is meant to time out (it cuts its own timeout short).
				e.Policy.Retry.Timeout = 30 * time.Second
				if tt.edit != nil {
					tt.edit(e)
				}
			})}, nil)
			h.mustFail("svc")
			events, err := h.store.Events(context.Background(), "svc", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var got []breaker.Cause
			for _, e := range events {
				if e.Kind == breaker.EventFailure || e.Kind == breaker.EventNeutralFailure {
					got = append(got, e.Cause)
				}
			}
			if len(got) != 1 || got[0] != tt.cause {
				t.Errorf("failure causes %q, want [%s]", got, tt.cause)
			}
		})
	}
}
