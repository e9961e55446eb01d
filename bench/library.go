package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/mem"
)

// Library overhead: Circuits.Do next to gobreaker v2's Execute, in one run of
// testing.Benchmark, on the success path (closed circuit) and the fail-fast
// path (open circuit).

type libCase struct {
	Name     string
	Parallel bool
	Bench    func(b *testing.B)
}

type libResult struct {
	Name        string
	Parallel    bool
	Rounds      []float64 // ns/op of each round, in the order they ran
	NsPerOp     float64   // the median of the rounds
	MinNs       float64
	MaxNs       float64
	AllocsPerOp int64
	BytesPerOp  int64
}

// libRounds is how many times every case runs, the cases taking turns: on a
// shared machine other work comes and goes, and a case compared with the
// gobreaker case that ran just before it, round by round (pairedRatio), sees
// much the same machine.
const libRounds = 5

var errBoom = errors.New("boom")

func ok(context.Context) error { return nil }

// doBench benchmarks Do on a circuit of c; wantOpen says the circuit is open,
// so every call must fail fast.
func doBench(c *fusebox.Circuits, parallel, wantOpen bool) func(b *testing.B) {
	ctx := context.Background()
	check := func(err error) error {
		if wantOpen != errors.Is(err, breaker.ErrOpen) {
			return fmt.Errorf("fusebox Do: %v (want open: %t)", err, wantOpen)
		}
		return nil
	}
	return func(b *testing.B) {
		b.ReportAllocs()
		if !parallel {
			for b.Loop() {
				if err := check(c.Do(ctx, "bench", ok)); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := check(c.Do(ctx, "bench", ok)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
}

func gobreakerBench(cb *gobreaker.CircuitBreaker[struct{}], parallel, wantOpen bool) func(b *testing.B) {
	req := func() (struct{}, error) { return struct{}{}, nil }
	check := func(err error) error {
		if wantOpen != errors.Is(err, gobreaker.ErrOpenState) {
			return fmt.Errorf("gobreaker Execute: %v (want open: %t)", err, wantOpen)
		}
		return nil
	}
	return func(b *testing.B) {
		b.ReportAllocs()
		if !parallel {
			for b.Loop() {
				_, err := cb.Execute(req)
				if err := check(err); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, err := cb.Execute(req)
				if err := check(err); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
}

// noTimeout is the like-for-like policy next to gobreaker, which has no
// timeouts: without a deadline of its own an attempt runs with the
// caller's context, and Do allocates nothing (issue 29's targets).
var noTimeout = fusebox.Policy{Retry: fusebox.RetryPolicy{Timeout: fusebox.NoDeadline, Deadline: fusebox.NoDeadline}}

const noTimeoutCase = "fusebox Do, mem store, no timeout"

// libCases builds the cases; file stores live under dir.
func libCases(dir string) ([]libCase, error) {
	var cases []libCase
	for _, parallel := range []bool{false, true} {
		fileStore := func(fsync bool) (*fusebox.Circuits, error) {
			d, err := os.MkdirTemp(dir, "store-")
			if err != nil {
				return nil, err
			}
			s, err := file.Open(d, file.WithFsync(fsync))
			if err != nil {
				return nil, err
			}
			return fusebox.New(s), nil
		}
		noSync, err := fileStore(false)
		if err != nil {
			return nil, err
		}
		withSync, err := fileStore(true)
		if err != nil {
			return nil, err
		}
		cases = append(cases,
			libCase{"gobreaker v2 Execute", parallel, gobreakerBench(gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "bench"}), parallel, false)},
			libCase{"fusebox Do, mem store", parallel, doBench(fusebox.New(mem.New()), parallel, false)},
			libCase{noTimeoutCase, parallel, doBench(fusebox.New(mem.New(), fusebox.WithPolicy(noTimeout)), parallel, false)},
			libCase{"fusebox Do, file store, fsync off", parallel, doBench(noSync, parallel, false)},
			libCase{"fusebox Do, file store, fsync on", parallel, doBench(withSync, parallel, false)},
		)
	}
	// The fail-fast path: an open circuit.
	openCB := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name: "bench", Timeout: time.Hour,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
	})
	openCB.Execute(func() (struct{}, error) { return struct{}{}, errBoom })
	openDo := fusebox.New(mem.New(), fusebox.WithPolicy(fusebox.Policy{
		Retry:   fusebox.RetryPolicy{Attempts: 1},
		Breaker: breaker.Policy{TripAfter: 1, OpenFor: time.Hour},
	}))
	openDo.Do(context.Background(), "bench", func(context.Context) error { return errBoom })
	cases = append(cases,
		libCase{"gobreaker v2 Execute, open", false, gobreakerBench(openCB, false, true)},
		libCase{"fusebox Do, mem store, open", false, doBench(openDo, false, true)},
	)
	return cases, nil
}

// setBenchtime sets testing.Benchmark's time per case and round.
func setBenchtime(d time.Duration) error {
	testing.Init()
	return flag.CommandLine.Set("test.benchtime", d.String())
}

func runLibrary(dir string) ([]libResult, error) {
	cases, err := libCases(dir)
	if err != nil {
		return nil, err
	}
	out, err := runCases(cases)
	if err != nil {
		return nil, err
	}
	for _, r := range out {
		log.Printf("library: %-40s %-8s %6.0f ns/op (%.0f–%.0f) %3d allocs/op", r.Name, mode(r.Parallel),
			r.NsPerOp, r.MinNs, r.MaxNs, r.AllocsPerOp)
	}
	return out, nil
}

// runCases runs every case libRounds times, the cases taking turns.
func runCases(cases []libCase) ([]libResult, error) {
	ns := make([][]float64, len(cases))
	out := make([]libResult, len(cases))
	for range libRounds {
		for i, c := range cases {
			r := testing.Benchmark(c.Bench)
			if r.N == 0 {
				return nil, fmt.Errorf("library: %s failed", c.Name)
			}
			ns[i] = append(ns[i], float64(r.T.Nanoseconds())/float64(r.N))
			out[i] = libResult{Name: c.Name, Parallel: c.Parallel, AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp()}
		}
	}
	for i := range out {
		out[i].Rounds = ns[i]
		sorted := slices.Sorted(slices.Values(ns[i]))
		out[i].NsPerOp, out[i].MinNs, out[i].MaxNs = median64(sorted), sorted[0], sorted[len(sorted)-1]
	}
	return out, nil
}

// pairedRatio is the median, over the rounds, of a's time over b's in the
// same round.
func pairedRatio(a, b libResult) float64 {
	if len(a.Rounds) == 0 || len(a.Rounds) != len(b.Rounds) {
		return ratio(a.NsPerOp, b.NsPerOp)
	}
	var rs []float64
	for i := range a.Rounds {
		rs = append(rs, ratio(a.Rounds[i], b.Rounds[i]))
	}
	slices.Sort(rs)
	return median64(rs)
}

// median64 is the middle of sorted (the mean of the two middle ones for an
// even count).
func median64(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func mode(parallel bool) string {
	if parallel {
		return "parallel"
	}
	return "serial"
}

func libraryRound(t *tools, benchtime time.Duration) (roundResult, error) {
	dir, err := newScratch(t.work, "library")
	if err != nil {
		return roundResult{}, err
	}
	if err := setBenchtime(benchtime / libRounds); err != nil {
		return roundResult{}, err
	}
	res, err := runLibrary(dir)
	if err != nil {
		return roundResult{}, err
	}
	get := func(name string, parallel bool) libResult {
		for _, r := range res {
			if r.Name == name && r.Parallel == parallel {
				return r
			}
		}
		return libResult{}
	}
	var rows [][]string
	for _, r := range res {
		gb := get(gobreakerFor(r.Name), r.Parallel)
		rows = append(rows, []string{r.Name, mode(r.Parallel), fmt.Sprintf("%.0f", r.NsPerOp), fmt.Sprintf("%.0f–%.0f", r.MinNs, r.MaxNs),
			fmt.Sprint(r.AllocsPerOp), fmt.Sprint(r.BytesPerOp), fmtRatio(pairedRatio(r, gb))})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "`testing.Benchmark` inside the command, %s a case in %d rounds that take turns (ns/op is the median round, "+
		"range the fastest and slowest; vs gobreaker is the median of each round's ratio to the gobreaker case run just before), "+
		"GOMAXPROCS=%d; parallel cases use `b.RunParallel`. "+
		"Every Do uses the default policy but the no-timeout cases', and the default clock (WallClock); the file store is `file.Open` on a temp dir. "+
		"The open circuit was opened by one failure (`TripAfter: 1`, open for an hour).\n\n", benchtime, libRounds, maxprocs())
	b.WriteString(mdTable([]string{"case", "mode", "ns/op", "range", "allocs/op", "B/op", "vs gobreaker"}, "llrrrrr", rows))
	memSerial, memPar := get("fusebox Do, mem store", false), get("fusebox Do, mem store", true)
	serial := pairedRatio(memSerial, get("gobreaker v2 Execute", false))
	par := pairedRatio(memPar, get("gobreaker v2 Execute", true))
	openRatio := pairedRatio(get("fusebox Do, mem store, open", false), get("gobreaker v2 Execute, open", false))
	allocs := max(memSerial.AllocsPerOp, memPar.AllocsPerOp)
	b.WriteString("\nThe targets are the in-memory Do's, with the default policy (its 10 s attempt timeout) and without a timeout " +
		"(`Timeout` and `Deadline` `fusebox.NoDeadline`: gobreaker has no timeouts either), for which issue 29 set the 2x and the 0 allocations.\n")
	bare, barePar := get(noTimeoutCase, false), get(noTimeoutCase, true)
	bareSerial := pairedRatio(bare, get("gobreaker v2 Execute", false))
	bareParallel := pairedRatio(barePar, get("gobreaker v2 Execute", true))
	return roundResult{Detail: b.String(), Figures: []figure{
		{Key: "serial", Label: "in-memory Do within 2x of gobreaker's Execute, serial", Value: serial, Format: fmtRatio, Met: atMost(2)},
		{Key: "parallel", Label: "in-memory Do within 2x of gobreaker's Execute, parallel", Value: par, Format: fmtRatio, Met: atMost(2)},
		{Key: "open", Label: "in-memory Do within 3x on an open circuit", Value: openRatio, Format: fmtRatio, Met: atMost(3)},
		{Key: "allocs", Label: "0 allocations on the success path", Value: float64(allocs), Format: fmtCount, Met: atMost(0)},
		{Key: "bare serial", Label: "in-memory Do without a timeout within 2x of gobreaker's Execute, serial", Value: bareSerial, Format: fmtRatio, Met: atMost(2)},
		{Key: "bare parallel", Label: "in-memory Do without a timeout within 2x of gobreaker's Execute, parallel", Value: bareParallel, Format: fmtRatio, Met: atMost(2)},
		{Key: "bare allocs", Label: "0 allocations on the success path without a timeout", Value: float64(max(bare.AllocsPerOp, barePar.AllocsPerOp)),
			Format: fmtCount, Met: atMost(0)},
		{Key: "file serial", Value: get("fusebox Do, file store, fsync on", false).NsPerOp, Format: fmtNanos},
		{Key: "file parallel", Value: get("fusebox Do, file store, fsync on", true).NsPerOp, Format: fmtNanos},
		{Key: "file allocs", Value: float64(get("fusebox Do, file store, fsync on", false).AllocsPerOp), Format: fmtCount},
		{Key: "gobreaker serial", Value: get("gobreaker v2 Execute", false).NsPerOp, Format: fmtNanos},
		{Key: "mem serial", Value: memSerial.NsPerOp, Format: fmtNanos},
	}}, nil
}

// libraryProse is what the library rounds show.
func libraryProse(s summary) string {
	return fmt.Sprintf("A serial in-memory `Do` took %s a call against gobreaker's %s; a success on the file store (fsync on) took %s serial "+
		"and %s with two goroutines, with %s allocations.",
		s.get("mem serial"), s.get("gobreaker serial"), s.get("file serial"), s.get("file parallel"), s.get("file allocs"))
}

// gobreakerFor names the gobreaker case a fusebox case is compared with.
func gobreakerFor(name string) string {
	if strings.HasSuffix(name, ", open") {
		return "gobreaker v2 Execute, open"
	}
	return "gobreaker v2 Execute"
}
