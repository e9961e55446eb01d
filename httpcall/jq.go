package httpcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

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

// decodeJSON parses a body holding exactly one JSON value, keeping numbers
// exact.
func decodeJSON(body []byte) (any, error) {
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

// results runs code on v and returns its outputs, failing on the first error
// or once their JSON text would pass limit bytes.
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
			b, _ := gojq.Marshal(x)
			size += int64(len(b))
		}
		if size > limit {
			return nil, fmt.Errorf("output larger than %d bytes", limit)
		}
		out = append(out, x)
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
