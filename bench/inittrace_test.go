package main

import (
	"testing"
	"time"
)

func TestParseInitTraceReadsTheRuntimesLinesAndSkipsTheRest(t *testing.T) {
	stderr := []byte(`init internal/bytealg @0.003 ms, 0 ms clock, 0 bytes, 0 allocs
init github.com/itchyny/gojq @1.204 ms, 0.234 ms clock, 219352 bytes, 2278 allocs
time=2026-12-01T10:00:00Z level=INFO msg=skipped
init net/http @1.5 ms, 0.043 ms clock, 4722 bytes, 49 allocs
`)
	got := parseInitTrace(stderr)
	want := []initTrace{
		{Pkg: "internal/bytealg", At: 3 * time.Microsecond},
		{Pkg: "github.com/itchyny/gojq", At: 1204 * time.Microsecond, Clock: 234 * time.Microsecond, Bytes: 219352, Allocs: 2278},
		{Pkg: "net/http", At: 1500 * time.Microsecond, Clock: 43 * time.Microsecond, Bytes: 4722, Allocs: 49},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Pkg != w.Pkg || g.Bytes != w.Bytes || g.Allocs != w.Allocs ||
			(g.At-w.At).Abs() > time.Microsecond || (g.Clock-w.Clock).Abs() > time.Microsecond {
			t.Errorf("line %d: got %+v, want %+v", i, g, w)
		}
	}
}
