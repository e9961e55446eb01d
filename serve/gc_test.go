package serve_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/serve"
)

// gcSettings reads the garbage collector's target and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1) // a negative limit only reads it
}

// The GC's settings are the process's, not the library's: a program that
// embeds the daemon, or a person who sets GOGC or GOMEMLIMIT, keeps its own.
func TestServingLeavesTheGCAlone(t *testing.T) {
	percent, limit := gcSettings()
	u := newUpstream(t, "u")
	d := start(t, config.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
	if r := d.get(t, "/call/u"); r.code != 200 { // Serve is serving
		t.Fatalf("call: %d %s", r.code, r.body)
	}
	if p, l := gcSettings(); p != percent || l != limit {
		t.Errorf("while serving: GOGC %d, limit %d; want the process's own %d, %d", p, l, percent, limit)
	}
}

// jq's memory bound is on heap growth, garbage included. With a large live
// heap (here 64 MiB, as a big decoded body makes) the daemon's GC settings
// must not let garbage alone pass the bound: a program that makes 300 MB of
// short-lived strings and keeps none answers. At GOGC 400 without the
// memory limit it is stopped as "used more than 128 MiB of memory".
func TestJQGarbageUnderTheDaemonsGCIsNotTakenForGrowth(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	ballast := make([]byte, 64<<20)
	u := newUpstream(t, "u")
	d := start(t, config.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) {
		e.Extract = `reduce range(30000) as $i (0; . + ("x" * 10000 | length))` // 300 MB made, none kept
		e.Policy.Retry.Attempts = 1
		e.Policy.Retry.Timeout = 30 * time.Second
		e.Policy.Retry.Deadline = 30 * time.Second
	})}}, serve.Options{})
	if r := d.get(t, "/call/u"); r.code != 200 || r.body != "300000000" {
		t.Errorf("call: %d %q, want 200 with the sum", r.code, r.body)
	}
	runtime.KeepAlive(ballast)
}
