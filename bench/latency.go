package main

import (
	"context"
	"crypto/md5"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Whole-process latency: every contender is run Runs times, interleaved in a
// shuffled order each round so that the machine's noise falls on all of them
// alike, and timed from fork to exit.

type latencyContender struct {
	Name string
	Argv []string
	Want int // the exit status that means it did what it should
}

type latencyResult struct {
	Name        string
	Median, P99 time.Duration
}

// chainConfig is the config of the fallback scenario: a chain whose primary
// is tripped, so its fallback answers.
const chainConfig = `circuits:
  primary:
    http: {url: "%[1]s/primary"}
  fallback:
    http: {url: "%[1]s/fallback"}
chains:
  lookup: {endpoints: [primary, fallback]}
`

// latencySetup opens the circuits, writes the config and the bash breaker's
// file, and returns the contenders. stop shuts the local HTTP server down.
func latencySetup(t *tools, dir string) (cs []latencyContender, env []string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/primary", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "primary is down", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/fallback", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, `{"temp": 21.5}`) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	stop = func() { srv.Close() }
	base := "http://" + ln.Addr().String()

	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, chainConfig, base), 0o600); err != nil {
		stop()
		return nil, nil, nil, err
	}
	env = isolatedEnv(dir)
	for _, name := range []string{"open-circuit", "primary"} {
		cmd := exec.Command(t.fusebox, "trip", "--new", name, "--for", "24h") // open-circuit is in no config
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("fusebox trip %s: %v\n%s", name, err, out)
		}
	}
	// The classic breaker's file, opened just now: its check skips.
	sum := md5.Sum([]byte("open-circuit\n"))
	cb := filepath.Join(dir, "cb_"+fmt.Sprintf("%x", sum)[:8])
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if err := os.WriteFile(cb, []byte(now+"\n"), 0o600); err != nil {
		stop()
		return nil, nil, nil, err
	}
	// The chain must be answered by its fallback, or the figure means nothing.
	check := exec.Command(t.fusebox, "call", "--json", "lookup")
	check.Env = env
	if out, err := check.Output(); err != nil || !strings.Contains(string(out), `"source":"fallback"`) && !strings.Contains(string(out), `"source": "fallback"`) {
		stop()
		return nil, nil, nil, fmt.Errorf("fusebox call lookup was not answered by the fallback: %v\n%s", err, out)
	}
	cs = []latencyContender{
		{Name: "/bin/true", Argv: []string{"/bin/true"}},
		{Name: "static Go hello-world (floor)", Argv: []string{t.hello}},
		{Name: "classic bash check, open", Argv: []string{"bash", t.script, "open-circuit", base + "/primary"}, Want: 75},
		{Name: "fusebox run, open (fail fast)", Argv: []string{t.fusebox, "run", "open-circuit", "--", "true"}, Want: 75},
		{Name: "fusebox run -- true, closed", Argv: []string{t.fusebox, "run", "healthy", "--", "true"}},
		{Name: "fusebox call, primary open → fallback", Argv: []string{t.fusebox, "call", "lookup"}},
		{Name: "curl the fallback directly", Argv: []string{"curl", "-fsS", base + "/fallback"}},
	}
	return cs, env, stop, nil
}

// runLatency times each contender runs times (after warm rounds that are not
// counted).
func runLatency(ctx context.Context, cs []latencyContender, env []string, runs int) ([]latencyResult, error) {
	const warm = 5
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	times := make([][]time.Duration, len(cs))
	rng := rand.New(rand.NewPCG(1, 2))
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	for round := range warm + runs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, k := range order {
			c := cs[k]
			cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
			cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, devnull, devnull, devnull
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if code := exitStatus(err); code != c.Want {
				return nil, fmt.Errorf("%s: exit status %d, want %d (%v)", c.Name, code, c.Want, err)
			}
			if round >= warm {
				times[k] = append(times[k], d)
			}
		}
	}
	res := make([]latencyResult, len(cs))
	for k, c := range cs {
		res[k] = latencyResult{Name: c.Name, Median: median(times[k]), P99: p99(times[k])}
	}
	return res, nil
}

func latencyReport(ctx context.Context, t *tools, runs int, outDir string) (string, error) {
	dir, err := newScratch(t.work, "latency")
	if err != nil {
		return "", err
	}
	cs, env, stop, err := latencySetup(t, dir)
	if err != nil {
		return "", err
	}
	defer stop()
	log.Printf("latency: %d contenders, %d runs each, interleaved", len(cs), runs)
	res, err := runLatency(ctx, cs, env, runs)
	if err != nil {
		return "", err
	}

	byName := map[string]latencyResult{}
	chart := BarChart{Title: "Whole-process latency: median, whisker to p99", Unit: "milliseconds",
		Note: fmt.Sprintf("%d interleaved runs each, fork to exit", runs)}
	var rows [][]string
	hello := res[1].Median
	for _, r := range res {
		byName[r.Name] = r
		rows = append(rows, []string{r.Name, fmtMs(r.Median), fmtMs(r.P99), fmtRatio(ratio(float64(r.Median), float64(hello)))})
		chart.Bars = append(chart.Bars, Bar{Label: r.Name, Value: ms(r.Median), Whisker: ms(r.P99)})
	}
	if err := writeChart(filepath.Join(outDir, "bench-latency.svg"), chart); err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d runs of each, interleaved in a shuffled order each round, timed from fork to exit.\n\n", runs)
	b.WriteString(mdTable([]string{"process", "median", "p99", "median / hello-world"}, "lrrr", rows))
	open := byName["fusebox run, open (fail fast)"].Median
	bash := byName["classic bash check, open"].Median
	call := byName["fusebox call, primary open → fallback"].Median
	curl := byName["curl the fallback directly"].Median
	vsHello := ratio(float64(open), float64(hello))
	vsBash := ratio(float64(bash), float64(open))
	b.WriteString("\n")
	b.WriteString(mdTable([]string{"target", "measured", "verdict"}, "lrl", [][]string{
		{"fail-fast run ≤2x the static hello-world (aim 1.5x)", fmtRatio(vsHello), verdict(vsHello <= 2) + aim(vsHello <= 1.5)},
		{"fail-fast run ≥3.5x faster than the classic bash check", fmtRatio(vsBash), verdict(vsBash >= 3.5)},
		{"`fusebox call` with its primary open, against curling the fallback directly", fmtRatio(ratio(float64(call), float64(curl))) + " the time", "(no target)"},
	}))
	b.WriteString("\n![latency](bench-latency.svg)\n")
	return b.String(), nil
}

func aim(met bool) string {
	if met {
		return ", aim met"
	}
	return ", aim missed"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
