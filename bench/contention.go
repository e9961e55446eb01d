package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Contention: N `fusebox run` processes on one circuit, released at once.
// Each child is this benchmark's own binary in barrier mode: it says it is
// ready, blocks until the parent closes the gate, then execs fusebox. So
// process start-up is over before the clock starts, and all N reach the
// circuit together.

const barrierEnv = "FUSEBOX_BENCH_BARRIER"

// The barrier child's file descriptors (cmd.ExtraFiles start at 3).
const (
	gateFD  = 3 // read until EOF: the parent closes the gate
	readyFD = 4 // one byte written when ready
)

// barrierChild runs in a child started by runContention: it reports ready,
// waits for the gate to open and execs its arguments. It returns only on
// error.
func barrierChild(args []string) error {
	ready := os.NewFile(readyFD, "ready")
	if _, err := ready.Write([]byte{1}); err != nil {
		return fmt.Errorf("barrier: ready: %w", err)
	}
	ready.Close()
	gate := os.NewFile(gateFD, "gate")
	io.Copy(io.Discard, gate) // returns at EOF: the gate is open
	gate.Close()
	if len(args) == 0 {
		return fmt.Errorf("barrier: no command")
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, barrierEnv+"=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(path, args, env)
}

type contentionResult struct {
	N           int
	Wall        time.Duration // from the gate opening to the last exit
	Median      time.Duration // of the processes' times from the gate opening
	Counted     int           // what status --json counted: successes, failures and skips
	Errors      int           // processes that exited with a status the command does not give
	StderrLines int           // warnings and errors the runs logged
}

// contentionCommand is what each of the processes runs, on one circuit.
type contentionCommand struct {
	name string
	args []string     // fusebox's
	ok   map[int]bool // the exit statuses it may end with
}

var (
	contendSuccess = contentionCommand{"succeeding", []string{"run", "contended", "--", "true"}, map[int]bool{0: true}}
	// Failing: one attempt each; once the circuit opens the others skip
	// (75), and a probe fails again (1).
	contendFailure = contentionCommand{"failing", []string{"run", "--attempts", "1", "contended", "--", "false"}, map[int]bool{1: true, 75: true}}
)

// runContention starts n fusebox runs of c on one circuit and releases them
// at once.
func runContention(ctx context.Context, t *tools, c contentionCommand, n int) (contentionResult, error) {
	dir, err := newScratch(t.work, "contention-"+c.name+"-"+strconv.Itoa(n))
	if err != nil {
		return contentionResult{}, err
	}
	env := isolatedEnv(dir)
	var stderr bytes.Buffer
	var stderrMu sync.Mutex
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return contentionResult{}, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return contentionResult{}, err
	}
	cmds := make([]*exec.Cmd, 0, n)
	for range n {
		cmd := exec.CommandContext(ctx, t.self, append([]string{t.fusebox}, c.args...)...)
		cmd.Env = append(env, barrierEnv+"=1")
		cmd.ExtraFiles = []*os.File{gateR, readyW}
		cmd.Stderr = lockedWriter{&stderrMu, &stderr}
		if err := cmd.Start(); err != nil {
			gateW.Close()
			for _, c := range cmds {
				c.Wait()
			}
			return contentionResult{}, fmt.Errorf("start contender: %w", err)
		}
		cmds = append(cmds, cmd)
	}
	gateR.Close()
	readyW.Close()
	io.CopyN(io.Discard, readyR, int64(n)) // every child is ready, or gone
	readyR.Close()

	start := time.Now()
	gateW.Close()
	ends := make([]time.Duration, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() {
			codes[i] = exitStatus(cmd.Wait())
			ends[i] = time.Since(start)
		})
	}
	wg.Wait()

	r := contentionResult{N: n, Median: median(ends)}
	for i := range n {
		r.Wall = max(r.Wall, ends[i])
		if !c.ok[codes[i]] {
			r.Errors++
		}
	}
	r.StderrLines = strings.Count(stderr.String(), "\n")
	if r.StderrLines > 0 && c.name == contendSuccess.name {
		log.Printf("contention %d: the runs logged:\n%s", n, firstLines(stderr.String(), 10))
	}
	r.Counted, err = totalCounted(t, env, "contended")
	return r, err
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// totalCounted reads what the circuit counted with `fusebox status --json`:
// every run is one success, one failure or one skip.
func totalCounted(t *tools, env []string, name string) (int, error) {
	cmd := exec.Command(t.fusebox, "status", "--json", name)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("fusebox status: %w", err)
	}
	var st []struct {
		Name           string `json:"name"`
		TotalSuccesses int    `json:"total_successes"`
		TotalFailures  int    `json:"total_failures"`
		Skipped        int    `json:"skipped"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("fusebox status --json: %w", err)
	}
	for _, s := range st {
		if s.Name == name {
			return s.TotalSuccesses + s.TotalFailures + s.Skipped, nil
		}
	}
	return 0, nil
}

func contentionRound(ctx context.Context, t *tools, sizes []int) (roundResult, error) {
	var b strings.Builder
	b.WriteString("Each process is `fusebox run contended -- true` (then `fusebox run --attempts 1 contended -- false`) " +
		"on one shared circuit (fsync on, the default); all are started, wait at a barrier, and are released together. " +
		"Counted is total_successes + total_failures + skipped in `status --json`: one per run.\n\n")
	var figs []figure
	var lostOrFailed int
	n := sizes[len(sizes)-1]
	for _, c := range []contentionCommand{contendSuccess, contendFailure} {
		var rows [][]string
		for _, size := range sizes {
			log.Printf("contention: %d processes, %s", size, c.name)
			r, err := runContention(ctx, t, c, size)
			if err != nil {
				return roundResult{}, err
			}
			lost := size - r.Counted
			lostOrFailed += lost + r.Errors
			rows = append(rows, []string{strconv.Itoa(size), fmtMs(r.Wall), fmtMs(r.Median),
				strconv.Itoa(r.Counted), strconv.Itoa(lost), strconv.Itoa(r.Errors), strconv.Itoa(r.StderrLines)})
			if size == n {
				figs = append(figs,
					figure{Key: c.name + "/wall", Value: float64(r.Wall), Format: fmtDur},
					figure{Key: c.name + "/counted", Value: float64(r.Counted), Format: fmtCount},
					figure{Key: c.name + "/lost", Value: float64(lost), Format: fmtCount})
			}
		}
		fmt.Fprintf(&b, "A %s command:\n\n", c.name)
		b.WriteString(mdTable([]string{"processes", "wall time", "median process", "counted",
			"lost updates", "errors", "log lines"}, "rrrrrrr", rows))
		b.WriteString("\n")
	}
	figs = append([]figure{{Key: "lost or failed", Label: fmt.Sprintf("up to %d processes: zero lost updates, zero errors", n),
		Value: float64(lostOrFailed), Format: func(v float64) string { return fmtCount(v) + " lost or failed" }, Met: atMost(0)}}, figs...)
	return roundResult{Detail: b.String(), Figures: figs}, nil
}

// contentionProse is what the contention rounds show, at the most
// processes.
func contentionProse(n int) func(summary) string {
	return func(s summary) string {
		return fmt.Sprintf("Of %d succeeding processes %s were counted and %s lost, in %s from release to the last exit; "+
			"of %d failing ones %s were counted and %s lost, in %s.",
			n, s.get("succeeding/counted"), s.get("succeeding/lost"), s.get("succeeding/wall"),
			n, s.get("failing/counted"), s.get("failing/lost"), s.get("failing/wall"))
	}
}

// contentionSizes parses "10,50,200".
func contentionSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("contention sizes: want numbers like 10,50,200, got %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}
