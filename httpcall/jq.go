package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

var errNotJSON = errors.New("body is not JSON")

// maxJSONDepth is how deep encoding/json nests; a deeper body is reported
// as that, not as "not JSON".
const maxJSONDepth = 10000

var errTooDeep = fmt.Errorf("body is JSON nested more than %d deep", maxJSONDepth)

// decodeJSON parses a body holding exactly one JSON value, keeping numbers
// exact.
func decodeJSON(body []byte) (any, error) {
	if depth, _ := jsonShape(body, maxJSONDepth); depth > maxJSONDepth {
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

// What decoding a JSON text into an any (decodeJSON) takes of the heap,
// at most, by what the text holds: measured with encoding/json and Go 1.26
// on 10 MiB texts of each shape, whose decoded value took from 1.0 times
// the text (long strings) through 7.9 (an API's list of objects) to 46
// times ([{"a":1},...]); the cost jsonShape counts came to 1.4 to 2.7
// times what each took after a collection, the decoder's own copy of the
// text included.
const (
	costPerByte      = 2   // the decoder's copy of the text, and strings and numbers copied out of it
	costPerObject    = 96  // a map, and the interface holding it
	costPerFullMap   = 300 // the first group of slots of a map with a key
	costPerArray     = 80  // a slice, and the interface holding it
	costPerMember    = 80  // a map entry, in a table up to twice as large as it needs
	costPerElement   = 32  // an interface in a slice grown by doubling
	costPerValueText = 32  // the one value a text holds
)

// jsonShape returns how deep the arrays and objects of a JSON text nest,
// stopping once past limit, and what decoding it takes of the heap, at
// most (see costPerByte).
func jsonShape(b []byte, limit int) (deepest int, cost int64) {
	depth := 0
	inString := false
	cost = costPerValueText + costPerByte*int64(len(b))
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
					return deepest, cost
				}
			}
			if c == '[' {
				cost += costPerArray
				continue
			}
			cost += costPerObject
			if j := skipSpace(b, i+1); j < len(b) && b[j] == '"' {
				cost += costPerFullMap
			}
		case c == ']' || c == '}':
			depth--
		case c == ':':
			cost += costPerMember
		case c == ',':
			cost += costPerElement
		}
	}
	return deepest, cost
}

// skipSpace returns the index of the first byte at or after i of b that is
// not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// Bounds on one jq evaluation besides its time (the attempt's timeout).
// gojq has no memory limit of its own, and one of its steps can allocate
// gigabytes before the next step looks at its context (`"x" * 1e9` is one
// strings.Repeat). So a program whose steps smallSteps cannot prove small
// runs in a child process that is killed once its resident set nears
// jqMemory (jqchild.go): a process can be stopped half-way through a step.
// A program with small steps runs in-process, the Go heap watched while it
// runs (HeapAlloc, sampled every jqMemorySample; gojq checks its context at
// every step): past jqInProcessMemory of growth it is stopped and run again
// in a child, with the whole bound. The limit leaves
// room for what passes it before the watcher looks: the append that grows
// the largest array by a quarter, and a step on a copy of the body. The
// outputs are bounded in number and in the size of their JSON text.
//
// Without IsolateJQ (a program using httpcall as a library, not the
// fusebox binary), every program runs in-process under the watcher with
// jqMemory: a step that allocates past it in one go passes it.
const (
	jqMemory          = 128 << 20
	jqInProcessMemory = jqMemory / 4
	jqMemorySample    = 5 * time.Millisecond
	jqMaxOutputs      = 100_000
	jqMaxCondition    = 1 << 20 // expect.jq's outputs, in bytes of JSON
)

var errJQMemory = fmt.Errorf("used more than %d MiB of memory", jqMemory>>20)

// jqProgram is a compiled jq program and whether it may run in-process.
type jqProgram struct {
	src   string
	code  *gojq.Code
	small bool // smallSteps
}

// compileJQ compiles a jq program: the one place a program is compiled,
// in this process (CompileJQ, JQ.compiled) and in jq's child (jqchild.go).
// It sees an empty environment, so $ENV and env cannot print the secrets a
// script was started with.
func compileJQ(src string) (*jqProgram, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	small := smallSteps(q)
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, err
	}
	return &jqProgram{src: src, code: code, small: small}, nil
}

// JQ is a jq program (an endpoint's extract: or expect: jq:, a watch's
// up:), compiled by CompileJQ: config compiles each program once, to
// check it, and every Client and Condition given it runs that compiled
// program as is. A JQ made by JQSource holds only the text, for a caller
// that evaluates none (fusebox run); what evaluates it compiles it then,
// once. The zero JQ is no program. A JQ is safe for concurrent use.
type JQ struct {
	src string
	p   *jqProgram // nil: not compiled (JQSource)
}

// CompileJQ compiles src, or reports why it is not a jq program fusebox
// can run.
func CompileJQ(src string) (JQ, error) {
	p, err := compileJQ(src)
	if err != nil {
		return JQ{}, err
	}
	return JQ{src: src, p: p}, nil
}

// JQSource returns the program src without compiling it: one that is
// never evaluated costs nothing, and one that is, is compiled then (a
// broken one is reported there).
func JQSource(src string) JQ { return JQ{src: src} }

// String returns the program's text, "" for none.
func (j JQ) String() string { return j.src }

// IsZero reports whether j is no program.
func (j JQ) IsZero() bool { return j.src == "" }

// compiled returns j's program: the one CompileJQ compiled, or else its
// text compiled now.
func (j JQ) compiled() (*jqProgram, error) {
	if j.p != nil {
		return j.p, nil
	}
	return compileJQ(j.src)
}

// program returns j's compiled program, nil for no program.
func (j JQ) program() (*jqProgram, error) {
	if j.IsZero() {
		return nil, nil
	}
	return j.compiled()
}

// evaluate runs p on a body (j) and renders its outputs: as extract does,
// or, for expect.jq (asExtract false), "true" or "false". limit bounds the
// outputs' text. While it runs it holds, out of j's JQMemory, the bound of
// the way it runs (and, in-process, the decoded body's cost), waiting for
// it until ctx ends.
func evaluate(ctx context.Context, j *jqInput, p *jqProgram, asExtract bool, limit int64) ([]byte, error) {
	if !jqIsolated {
		v, err := j.value(ctx, jqMemory)
		if err != nil {
			return nil, err
		}
		return watched(ctx, p.code, v, asExtract, limit, jqMemory)
	}
	if p.small {
		v, err := j.value(ctx, jqInProcessMemory)
		if err != nil {
			return nil, err
		}
		out, err := watched(ctx, p.code, v, asExtract, limit, jqInProcessMemory)
		if err != errJQMemory {
			return out, err
		}
		// It may yet fit the bound: in a child, once this process has
		// given back to the system what the try took.
		j.letGo()
		debug.FreeOSMemory()
	}
	j.letGo() // the child decodes the body itself
	if err := j.hold(ctx, jqMemory); err != nil {
		return nil, err
	}
	return inChild(ctx, p.src, j.body, asExtract, limit)
}

// inProcessShare is what a program holds of a JQMemory while it runs
// in-process on a decoded body, or 0 when it runs in a child.
func (p *jqProgram) inProcessShare() int64 {
	switch {
	case !jqIsolated:
		return jqMemory
	case p.small:
		return jqInProcessMemory
	}
	return 0
}

// watched renders code's outputs in-process, stopping it past memory bytes
// of heap growth.
func watched(ctx context.Context, code *gojq.Code, v any, asExtract bool, limit int64, memory uint64) ([]byte, error) {
	ctx, stop := watchHeap(ctx, memory)
	defer stop()
	out, err := render(ctx, code, v, asExtract, limit)
	if err != nil && context.Cause(ctx) == errJQMemory {
		return nil, errJQMemory
	}
	return out, err
}

// render runs code on v and renders its outputs as evaluate says.
func render(ctx context.Context, code *gojq.Code, v any, asExtract bool, limit int64) ([]byte, error) {
	if !asExtract {
		ok, err := condition(ctx, code, v)
		if err != nil {
			return nil, err
		}
		return []byte(strconv.FormatBool(ok)), nil
	}
	return extract(ctx, code, v, limit)
}

// results runs code on v and returns its outputs, failing on the first error,
// once their JSON text would pass limit bytes, or past jqMaxOutputs outputs.
func results(ctx context.Context, code *gojq.Code, v any, limit int64) ([]any, error) {
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
			return nil, err
		}
		if s, ok := x.(string); ok {
			size += int64(len(s))
		} else {
			size += jsonSize(x, limit-size)
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

// jsonSize returns the length of gojq.Marshal(v), or a number past budget
// once it is sure to be: an output that holds one value a million times
// costs no more to measure than budget bytes.
func jsonSize(v any, budget int64) int64 {
	switch v := v.(type) {
	case nil, bool, int, float64:
		b, _ := gojq.Marshal(v)
		return int64(len(b))
	case string:
		n := int64(2)
		for i := 0; i < len(v); {
			c := v[i]
			switch {
			case c >= ' ' && c <= '~' && c != '"' && c != '\\':
				n, i = n+1, i+1
			case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n, i = n+2, i+1
			case c < utf8.RuneSelf:
				n, i = n+6, i+1 // \u00XX
			default:
				r, size := utf8.DecodeRuneInString(v[i:])
				if r == utf8.RuneError && size == 1 {
					n += 6 // \ufffd
				} else {
					n += int64(size)
				}
				i += size
			}
		}
		return n
	case []any:
		n := int64(1 + max(len(v), 1)) // brackets and commas
		for _, e := range v {
			if n > budget {
				break
			}
			n += jsonSize(e, budget-n)
		}
		return n
	case map[string]any:
		n := int64(1 + max(len(v), 1))
		for k, e := range v {
			if n > budget {
				break
			}
			n += jsonSize(k, budget-n) + 1
			n += jsonSize(e, budget-n)
		}
		return n
	default: // *big.Int, json.Number: no larger than the input they came from
		b, _ := gojq.Marshal(v)
		return int64(len(b))
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
	xs, err := results(ctx, code, v, jqMaxCondition)
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
