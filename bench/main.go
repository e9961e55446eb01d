// Command bench runs fusebox's benchmarks on this machine and writes the
// results into docs/benchmarks.md (one generated section per scenario) and
// SVG charts beside it:
//
//	cd bench && go run . -out ../docs
//
// The scenarios are those of issue 5: the storm (fusebox against the classic
// bash breaker, curl --retry and each other, against an upstream that is down
// and comes back), whole-process latency, contention between processes,
// library overhead next to gobreaker v2, and the jitter simulation; then the
// burst, the daemon against httputil.ReverseProxy, and issue 34's budgets.
// Each runs in rounds, the scenarios taking turns (rounds.go). It lives in a
// module of its own so that fusebox never carries its dependencies.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// allScenarios are in the report's order; runOrder runs contention last, as
// its hundreds of processes disturb the machine for a while after.
var allScenarios = []string{"storm", "burst", "latency", "contention", "library", "jitter", "proxy", "budgets"}

func runOrder(scenarios []string) []string {
	var out []string
	for _, s := range []string{"storm", "burst", "latency", "library", "jitter", "proxy", "budgets", "contention"} {
		if slices.Contains(scenarios, s) {
			out = append(out, s)
		}
	}
	return out
}

type options struct {
	out        string
	repo       string
	scenarios  []string
	quick      bool
	rounds     int
	tick       time.Duration
	runs       int
	contention []int
	benchtime  time.Duration
	proxyTime  time.Duration
	proxyConns int
	keep       bool
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	o := &options{}
	run := fs.String("run", strings.Join(allScenarios, ","), "comma-separated `scenarios` to run: "+strings.Join(allScenarios, ", "))
	sizes := fs.String("n", "10,50,200", "contention: process `counts`")
	fs.StringVar(&o.out, "out", "../docs", "`dir` to write benchmarks.md and the charts into")
	fs.StringVar(&o.repo, "repo", "..", "the fusebox checkout `dir` (fusebox is built from it)")
	fs.BoolVar(&o.quick, "quick", false, "smoke run under a minute: one round, 250ms ticks, 30 latency runs, 10 simulation runs, 100ms per library case")
	fs.IntVar(&o.rounds, "rounds", 0, "`N` rounds of every scenario, the scenarios taking turns (default 3, 1 with -quick)")
	fs.DurationVar(&o.tick, "tick", 0, "storm: real time standing for one cron minute (default 1s, 250ms with -quick)")
	fs.IntVar(&o.runs, "runs", 0, "latency: runs of each process (default 300, 30 with -quick)")
	fs.DurationVar(&o.benchtime, "benchtime", 0, "library: time per case (default 1s, 100ms with -quick)")
	fs.DurationVar(&o.proxyTime, "proxytime", 0, "proxy: load time per path (default 15s, 1.5s with -quick)")
	fs.IntVar(&o.proxyConns, "c", 16, "proxy: concurrent keep-alive `connections`")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch dir (state files, job logs) and print where it is")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for _, s := range strings.Split(*run, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allScenarios, s) {
			return nil, fmt.Errorf("-run: unknown scenario %q (want %s)", s, strings.Join(allScenarios, ", "))
		}
		o.scenarios = append(o.scenarios, s)
	}
	var err error
	if o.contention, err = contentionSizes(*sizes); err != nil {
		return nil, err
	}
	def := func(v *time.Duration, full, quick time.Duration) {
		if *v == 0 {
			*v = full
			if o.quick {
				*v = quick
			}
		}
	}
	def(&o.tick, time.Second, 250*time.Millisecond)
	def(&o.benchtime, time.Second, 100*time.Millisecond)
	def(&o.proxyTime, 15*time.Second, 1500*time.Millisecond)
	if o.proxyConns < 1 {
		return nil, fmt.Errorf("-c: want at least 1 connection, got %d", o.proxyConns)
	}
	if o.rounds == 0 {
		o.rounds = 3
		if o.quick {
			o.rounds = 1
		}
	}
	if o.rounds < 1 {
		return nil, fmt.Errorf("-rounds: want at least 1 round, got %d", o.rounds)
	}
	if o.runs == 0 {
		o.runs = 300
		if o.quick {
			o.runs = 30
		}
	}
	if err := (Scale{Tick: o.tick}).Validate(); err != nil {
		return nil, err
	}
	return o, nil
}

func main() {
	if os.Getenv(barrierEnv) == "1" {
		log.Fatal(barrierChild(os.Args[1:]))
	}
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")
	o, err := parseFlags(os.Args[1:])
	if err == flag.ErrHelp {
		os.Exit(0)
	}
	if err != nil {
		log.Print(err)
		os.Exit(64)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o *options) error {
	start := time.Now()
	repo, err := filepath.Abs(o.repo)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create -out dir: %w", err)
	}
	work, err := os.MkdirTemp("", "fusebox-bench-")
	if err != nil {
		return err
	}
	if o.keep {
		defer log.Printf("scratch dir kept: %s", work)
	} else {
		defer os.RemoveAll(work)
	}

	log.Printf("building fusebox from %s", repo)
	t, err := buildTools(ctx, repo, work)
	if err != nil {
		return err
	}
	version := fuseboxVersion(ctx, repo)
	results, loads, charts := map[string][]roundResult{}, map[string][]roundLoad{}, map[string][]string{}
	for r := range o.rounds {
		rt := *t
		rt.work = filepath.Join(work, fmt.Sprintf("round-%d", r+1))
		for _, s := range runOrder(o.scenarios) {
			if s == "jitter" && r > 0 {
				continue // simulated and seeded: every round gives the same figures
			}
			chartDir := filepath.Join(rt.work, "charts-"+s)
			if err := os.MkdirAll(chartDir, 0o755); err != nil {
				return err
			}
			log.Printf("round %d of %d: %s", r+1, o.rounds, s)
			l := roundLoad{OtherWork: otherWork(), LoadStart: loadAverage(), Niceness: niceness(), Start: time.Now()}
			res, err := runScenario(ctx, &rt, o, repo, s, chartDir)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s, r+1, err)
			}
			l.End, l.LoadEnd = time.Now(), loadAverage()
			results[s], loads[s], charts[s] = append(results[s], res), append(loads[s], l), append(charts[s], chartDir)
		}
	}
	sections := map[string]string{}
	names := append([]string{"machine"}, o.scenarios...)
	for _, s := range o.scenarios {
		sum := overRounds(results[s])
		if err := copyCharts(charts[s][sum.medianRound()], o.out); err != nil {
			return err
		}
		sections[s] = section(sum, proseOf(s, o), loads[s], version)
	}
	sections["machine"] = machineReport(ctx, t, o.quick)
	report := filepath.Join(o.out, "benchmarks.md")
	if err := updateReport(report, names, sections); err != nil {
		return err
	}
	log.Printf("wrote %s and its charts in %s", report, time.Since(start).Round(time.Second))
	return nil
}

// runScenario runs one round of scenario s, writing its charts into
// chartDir.
func runScenario(ctx context.Context, t *tools, o *options, repo, s, chartDir string) (roundResult, error) {
	switch s {
	case "storm":
		return stormRound(ctx, t, defaultStorm(o.tick), chartDir)
	case "burst":
		return burstRound(ctx, t, defaultBurst())
	case "latency":
		return latencyRound(ctx, t, repo, o.runs, chartDir)
	case "contention":
		return contentionRound(ctx, t, o.contention)
	case "library":
		return libraryRound(t, o.benchtime)
	case "jitter":
		return jitterRound(defaultJitterSim(o.quick), chartDir)
	case "proxy":
		return proxyRound(ctx, t, o.proxyTime, o.proxyConns)
	case "budgets":
		return budgetsRound(ctx, t)
	}
	return roundResult{}, fmt.Errorf("unknown scenario %q", s)
}

// proseOf is the scenario's "what this run shows", nil for one whose
// tables say it all.
func proseOf(s string, o *options) func(summary) string {
	switch s {
	case "storm":
		return stormProse
	case "burst":
		return burstProse
	case "latency":
		return latencyProse
	case "contention":
		return contentionProse(o.contention[len(o.contention)-1])
	case "library":
		return libraryProse
	case "proxy":
		return proxyProse
	case "budgets":
		return budgetsProse
	}
	return nil
}

// copyCharts copies the SVG charts of the round the section shows into out.
func copyCharts(from, out string) error {
	svgs, err := filepath.Glob(filepath.Join(from, "*.svg"))
	if err != nil {
		return err
	}
	for _, p := range svgs {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(p)), b, 0o644); err != nil {
			return fmt.Errorf("write chart: %w", err)
		}
	}
	return nil
}
