package httpcall_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/httpcall"
)

// TestJQAndJSONBounds: a body nested deeper than JSON decoders go is
// reported as that, and a jq program that would take the machine's memory
// or produce values without end is stopped by its memory or output bound,
// not by its timeout (30s here) or an out-of-memory kill.
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			t.Logf("%s: stopped after %s; heap peak so far %d MiB", tt.name, time.Since(start).Round(time.Millisecond), m.HeapSys>>20)
		})
	}
}
