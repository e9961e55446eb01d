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
	Successes   int           // total_successes in status --json
	Errors      int           // processes that did not exit 0
	StderrLines int           // warnings and errors the runs logged
}

// runContention starts n fusebox runs on one circuit and releases them at once.
func runContention(ctx context.Context, t *tools, n int) (contentionResult, error) {
	dir, err := newScratch(t.work, "contention-"+strconv.Itoa(n))
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
		cmd := exec.CommandContext(ctx, t.self, t.fusebox, "run", "contended", "--", "true")
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
		if codes[i] != 0 {
			r.Errors++
		}
	}
	r.StderrLines = strings.Count(stderr.String(), "\n")
	if r.StderrLines > 0 {
		log.Printf("contention %d: the runs logged:\n%s", n, firstLines(stderr.String(), 10))
	}
	r.Successes, err = totalSuccesses(t, env, "contended")
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

// totalSuccesses reads the circuit's total_successes with `fusebox status
// --json`.
func totalSuccesses(t *tools, env []string, name string) (int, error) {
	cmd := exec.Command(t.fusebox, "status", "--json", name)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("fusebox status: %w", err)
	}
	var st []struct {
		Name           string `json:"name"`
		TotalSuccesses int    `json:"total_successes"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("fusebox status --json: %w", err)
	}
	for _, s := range st {
		if s.Name == name {
			return s.TotalSuccesses, nil
		}
	}
	return 0, nil
}

func contentionReport(ctx context.Context, t *tools, sizes []int) (string, error) {
	var rows [][]string
	met := true
	var last contentionResult
	for _, n := range sizes {
		log.Printf("contention: %d processes", n)
		r, err := runContention(ctx, t, n)
		if err != nil {
			return "", err
		}
		lost := n - r.Successes
		met = met && lost == 0 && r.Errors == 0
		last = r
		rows = append(rows, []string{strconv.Itoa(n), fmtMs(r.Wall), fmtMs(r.Median),
			strconv.Itoa(r.Successes), strconv.Itoa(lost), strconv.Itoa(r.Errors), strconv.Itoa(r.StderrLines)})
	}
	var b strings.Builder
	b.WriteString("Each process is `fusebox run contended -- true` on one shared circuit (fsync on, the default); " +
		"all are started, wait at a barrier, and are released together.\n\n")
	b.WriteString(mdTable([]string{"processes", "wall time", "median process", "total_successes",
		"lost updates", "errors", "log lines"}, "rrrrrrr", rows))
	fmt.Fprintf(&b, "\nTarget: %d processes, zero lost updates, zero errors: %s (%d lost, %d errors).\n",
		last.N, verdict(met), last.N-last.Successes, last.Errors)
	return b.String(), nil
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
