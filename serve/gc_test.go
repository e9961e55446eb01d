package serve_test

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

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
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL)}}, serve.Options{})
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
	d := start(t, serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) {
		e.Extract = httpcall.JQSource(`reduce range(30000) as $i (0; . + ("x" * 10000 | length))`) // 300 MB made, none kept
		e.Policy.Retry.Attempts = 1
		e.Policy.Retry.Timeout = 30 * time.Second
		e.Policy.Retry.Deadline = 30 * time.Second
	})}}, serve.Options{})
	if r := d.get(t, "/call/u"); r.code != 200 || r.body != "300000000" {
		t.Errorf("call: %d %q, want 200 with the sum", r.code, r.body)
	}
	runtime.KeepAlive(ballast)
}

// The daemon's jq programs share one bound, not one each: twelve callers at
// once, each with a call of its own, hold no more than httpcall.DefaultJQMemory of
// jq bounds between them (by the daemon's accounting), and each is
// answered. A reload keeps the same bound.
func TestTheDaemonsJQProgramsShareOneBound(t *testing.T) {
	u := newUpstream(t, "u")
	targets := serve.Targets{Endpoints: []*httpcall.Endpoint{endpoint("u", u.URL, func(e *httpcall.Endpoint) {
		e.PassQuery = true
		e.Extract = httpcall.JQSource(`.from * 1000 | length`)
		e.Policy.Retry.Timeout = 5 * time.Minute // a safety net for a busy machine
		e.Policy.Retry.Deadline = 5 * time.Minute
	})}}
	d := start(t, targets, serve.Options{})
	mem := d.JQMemory()
	if err := d.Reload(targets); err != nil {
		t.Fatal(err)
	}
	if d.JQMemory() != mem {
		t.Fatal("a reload made a second jq bound")
	}
	const callers = 12
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			if r := d.get(t, "/call/u?n="+strconv.Itoa(i)); r.code != 200 || r.body != "1000" {
				t.Errorf("caller %d: %d %q", i, r.code, r.body)
			}
		})
	}
	wg.Wait()
	if mem.Total() != httpcall.DefaultJQMemory || mem.Peak() > mem.Total() {
		t.Fatalf("%d callers at once held %d MiB of jq bounds, of %d MiB; want no more than httpcall.DefaultJQMemory (%d MiB)",
			callers, mem.Peak()>>20, mem.Total()>>20, httpcall.DefaultJQMemory>>20)
	}
	t.Logf("%d callers at once: %d MiB of jq bounds held at most, of %d MiB; %d waited", callers, mem.Peak()>>20, mem.Total()>>20, mem.Waited())
}
