package httpcall_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// TestJQAndJSONBounds: a body nested deeper than JSON decoders go is
// reported as that, and a jq program that would take the machine's memory
// or produce values without end is stopped by its memory or output bound,
// not by its timeout (30s here) or an out-of-memory kill: in-process (small
// steps), in-process and then in a child (small steps, but many), or in a
// child. reliability's TestHostileJQStaysInItsBound measures the resident
// sets.
func TestJQAndJSONBounds(t *testing.T) {
	deep := strings.Repeat("[", 50000) + strings.Repeat("]", 50000)
	tests := []struct {
		name, body, extract, wantReason string
	}{
		{"a body nested 50,000 deep", deep, ".", "body is JSON nested more than 10000 deep"},
		{"unbounded recursion", `{}`, "def f: 1+f; f", "used more than 128 MiB of memory"},
		{"one ever-growing array", `{}`, "[range(1e12)]", "used more than 128 MiB of memory"},
		{"values without end", `{}`, "range(1e12)", "more than 100000 outputs"},
		{"a string doubling itself", `{}`, `def f(s): f(s+s); f("x")`, "used more than 128 MiB of memory"},
		{"a string repeated a billion times in one step", `{}`, `"x" * 1e9 | length`, "used more than 128 MiB of memory"},
		// Refused by the child's address-space limit: its 8 GB are never touched.
		{"an array extended to half a billion in one step", `{}`, `null | .[500000000] = 1 | length`, "used more than 128 MiB of memory"},
		{"the body 100,000 times in one output", `{"a":"` + strings.Repeat("x", 1000) + `"}`, `. as $b | [range(1e5) | $b]`, "output larger than 10485760 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if httpcall.RaceBuild && strings.Contains(tt.name, "half a billion") {
				t.Skip("a race-detector build has no address-space limit")
			}
			s := serve(t, status(200, tt.body))
			h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
				e.Extract = tt.extract
				e.Policy.Retry.Attempts = 1
				e.Policy.Retry.Timeout = 30 * time.Second
				e.Policy.Retry.Deadline = 30 * time.Second
			})}, nil)
			start := time.Now()
			_, ce := h.mustFail("svc")
			wantContains(t, "error", ce.Error(), tt.wantReason)
			t.Logf("%s: stopped after %s", tt.name, time.Since(start).Round(time.Millisecond))
		})
	}
}
