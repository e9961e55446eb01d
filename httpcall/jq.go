package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
)

// compileJQ compiles a jq program. It sees an empty environment, so $ENV and
// env cannot print the secrets a script was started with.
func compileJQ(src string) (*gojq.Code, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
}

var errNotJSON = errors.New("body is not JSON")

// maxJSONDepth is how deep encoding/json nests; a deeper body is reported
// as that, not as "not JSON".
const maxJSONDepth = 10000

var errTooDeep = fmt.Errorf("body is JSON nested more than %d deep", maxJSONDepth)

// decodeJSON parses a body holding exactly one JSON value, keeping numbers
// exact.
func decodeJSON(body []byte) (any, error) {
	if jsonDepth(body, maxJSONDepth) > maxJSONDepth {
		return nil, errTooDeep
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errNotJSON
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotJSON
	}
	return v, nil
}

// jsonDepth returns how deep the arrays and objects of a JSON text nest,
// stopping once past limit.
func jsonDepth(b []byte, limit int) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// Bounds on one jq evaluation besides its time (the attempt's timeout).
// gojq has no memory limit of its own, so the Go heap (HeapAlloc) is
// watched while it runs: past jqMemory of growth, sampled every jqMemorySample, the
// evaluation is stopped (gojq checks its context at every instruction). The
// outputs are bounded in number and in the size of their JSON text.
const (
	jqMemory       = 128 << 20
	jqMemorySample = 5 * time.Millisecond
	jqMaxOutputs   = 100_000
)

var errJQMemory = fmt.Errorf("used more than %d MiB of memory", jqMemory>>20)

// results runs code on v and returns its outputs, failing on the first error,
// once their JSON text would pass limit bytes, past jqMaxOutputs outputs, or
// past jqMemory of heap growth.
func results(ctx context.Context, code *gojq.Code, v any, limit int64) ([]any, error) {
	ctx, stop := watchHeap(ctx, jqMemory)
	defer stop()
	var out []any
	var size int64
	iter := code.RunWithContext(ctx, v)
	for {
		x, ok := iter.Next()
		if !ok {
			return out, nil
		}
		if err, ok := x.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return out, nil
			}
			if context.Cause(ctx) == errJQMemory {
				return nil, errJQMemory
			}
			return nil, err
		}
		if s, ok := x.(string); ok {
			size += int64(len(s))
		} else {
			b, _ := gojq.Marshal(x)
			size += int64(len(b))
		}
		if size > limit {
			return nil, fmt.Errorf("output larger than %d bytes", limit)
		}
		if len(out) == jqMaxOutputs {
			return nil, fmt.Errorf("more than %d outputs", jqMaxOutputs)
		}
		out = append(out, x)
	}
}

// watchHeap returns a context that ends with cause errJQMemory once the Go
// heap has grown by more than limit bytes, and stop, which stops watching.
func watchHeap(parent context.Context, limit uint64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	// runtime.ReadMemStats stops the world for microseconds, only while jq
	// runs; runtime/metrics would not, but its init would run on every
	// fusebox run, jq or not.
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(jqMemorySample)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if heap() > base+limit {
					cancel(errJQMemory)
					return
				}
			}
		}
	})
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// condition reports whether code holds for v: it gave at least one output
// and every output was truthy (neither false nor null).
func condition(ctx context.Context, code *gojq.Code, v any) (bool, error) {
	xs, err := results(ctx, code, v, 1<<20)
	if err != nil || len(xs) == 0 {
		return false, err
	}
	for _, x := range xs {
		if x == nil || x == false {
			return false, nil
		}
	}
	return true, nil
}

// extract renders code's outputs for v as jq -r would: strings raw, other
// values as compact JSON, one per line.
func extract(ctx context.Context, code *gojq.Code, v any, limit int64) ([]byte, error) {
	xs, err := results(ctx, code, v, limit)
	if err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		return nil, errors.New("no result")
	}
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if s, ok := x.(string); ok {
			b.WriteString(s)
			continue
		}
		j, _ := gojq.Marshal(x)
		b.Write(j)
	}
	return []byte(b.String()), nil
}
