package httpcall_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
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
				e.Extract = httpcall.JQSource(tt.extract)
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

// Twelve calls at once whose programs run in children (string arithmetic
// may allocate past the in-process bound in one step) share one JQMemory:
// by its accounting no more than its total, two children's bounds, is in
// use at any moment, and every call is answered, those that waited too.
func TestConcurrentJQCallsShareOneBound(t *testing.T) {
	s := serve(t, status(200, `{"n":"x"}`))
	mem := httpcall.NewJQMemory(2 * 128 << 20)
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.Extract = httpcall.JQSource(`.n * 1000 | length`)
		e.Policy.Retry.Attempts = 1
		e.Policy.Retry.Timeout = 5 * time.Minute // a safety net: a busy machine starts twelve processes slowly
		e.Policy.Retry.Deadline = 5 * time.Minute
	})}, nil, httpcall.WithJQMemory(mem))
	const calls = 12
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			res, err := h.client.Call(context.Background(), "svc", httpcall.CallOptions{})
			if err != nil {
				t.Errorf("a call among %d at once: %v", calls, err)
				return
			}
			if string(res.Body) != "1000" {
				t.Errorf("a call among %d at once answered %q", calls, res.Body)
			}
		})
	}
	wg.Wait()
	if peak := mem.Peak(); peak > mem.Total() || peak < 128<<20 {
		t.Fatalf("the jq programs in flight held %d MiB at most; want one child's 128 MiB at least, and no more than the total %d MiB", peak>>20, mem.Total()>>20)
	}
	t.Logf("%d calls at once: at most %d MiB of jq bounds held, of %d MiB; %d waited for their share", calls, mem.Peak()>>20, mem.Total()>>20, mem.Waited())
}

// A body's decoded value counts against the JQMemory with the program run
// on it, before it is decoded: six calls at once on a 2 MB list of objects
// (its decoded value estimated at 76 MiB, with an in-process share
// of 32 MiB, and a total of 128 MiB) take turns, and all are
// answered; a body that would take more than a program may use decoded is
// refused without decoding it.
func TestDecodedBodiesShareTheJQBound(t *testing.T) {
	list := `{"list":[` + strings.Repeat(`{"a":1,"b":"xy"},`, 2_000_000/17) + `{}]}`
	s := serve(t, status(200, list))
	mem := httpcall.NewJQMemory(128 << 20)
	h := newHarness(t, []*httpcall.Endpoint{endpoint("svc", s.URL, func(e *httpcall.Endpoint) {
		e.Extract = httpcall.JQSource(`.list | length`)
		e.Policy.Retry.Attempts = 1
		e.Policy.Retry.Timeout = 5 * time.Minute // a safety net: the calls wait for each other
		e.Policy.Retry.Deadline = 5 * time.Minute
	})}, nil, httpcall.WithJQMemory(mem))
	const calls = 6
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			res, err := h.client.Call(context.Background(), "svc", httpcall.CallOptions{})
			if err != nil {
				t.Errorf("a call among %d at once: %v", calls, err)
				return
			}
			if want := strconv.Itoa(2_000_000/17 + 1); string(res.Body) != want {
				t.Errorf("a call among %d at once answered %q, want %s", calls, res.Body, want)
			}
		})
	}
	wg.Wait()
	if peak := mem.Peak(); peak > mem.Total() || peak <= 32<<20 || mem.Waited() == 0 {
		t.Fatalf("held %d MiB at most of %d, %d waited; want more than a program's 32 MiB (the decoded body counts), no more than the total, and some waiting", peak>>20, mem.Total()>>20, mem.Waited())
	}
	t.Logf("%d calls at once on a %d-byte body: at most %d MiB held, of %d MiB; %d waited", calls, len(list), mem.Peak()>>20, mem.Total()>>20, mem.Waited())

	huge := serve(t, status(200, `[`+strings.Repeat(`{"a":1},`, 1_000_000)+`{}]`))
	h = newHarness(t, []*httpcall.Endpoint{endpoint("huge", huge.URL, func(e *httpcall.Endpoint) {
		e.Extract = httpcall.JQSource(`length`)
		e.Policy.Retry.Attempts = 1
	})}, nil, httpcall.WithJQMemory(mem))
	_, ce := h.mustFail("huge")
	wantContains(t, "error", ce.Error(), "decoded, more than the 128 MiB a jq program may use")
}
