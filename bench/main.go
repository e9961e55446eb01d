// Command bench runs fusebox's benchmarks on this machine and writes the
// results into docs/benchmarks.md (one generated section per scenario) and
// SVG charts beside it:
//
//	cd bench && go run . -out ../docs
//
// The scenarios are those of issue 5: the storm (fusebox against the classic
// bash breaker, curl --retry and each other, against an upstream that is down
// and comes back), whole-process latency, contention between processes,
// library overhead next to gobreaker v2, and the jitter simulation. It lives
// in a module of its own so that fusebox never carries its dependencies.
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
var allScenarios = []string{"storm", "burst", "latency", "contention", "library", "jitter", "proxy"}

func runOrder(scenarios []string) []string {
	var out []string
	for _, s := range []string{"storm", "burst", "latency", "library", "jitter", "proxy", "contention"} {
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
	fs.BoolVar(&o.quick, "quick", false, "smoke run under a minute: 250ms ticks, 30 latency runs, 10 simulation runs, 100ms per library case")
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
	sections := map[string]string{}
	names := append([]string{"machine"}, o.scenarios...)
	for _, s := range runOrder(o.scenarios) {
		var body string
		before, load := otherWork(), loadAverage()
		switch s {
		case "storm":
			body, err = stormReport(ctx, t, defaultStorm(o.tick), o.out)
		case "burst":
			body, err = burstReport(ctx, t, defaultBurst())
		case "latency":
			body, err = latencyReport(ctx, t, repo, o.runs, o.out)
		case "contention":
			body, err = contentionReport(ctx, t, o.contention)
		case "library":
			body, err = libraryReport(t, o.benchtime)
		case "jitter":
			body, err = jitterReport(defaultJitterSim(o.quick), o.out)
		case "proxy":
			body, err = proxyReport(ctx, t, o.proxyTime, o.proxyConns)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		sections[s] = body + fmt.Sprintf("\n_Measured %s on fusebox %s; %s; load average %s at its start, %s at its end; %s._\n",
			time.Now().UTC().Format("2006-01-02 15:04 MST"), version, before, load, loadAverage(), niceness())
	}
	sections["machine"] = machineReport(ctx, t, o.quick)
	report := filepath.Join(o.out, "benchmarks.md")
	if err := updateReport(report, names, sections); err != nil {
		return err
	}
	log.Printf("wrote %s and its charts in %s", report, time.Since(start).Round(time.Second))
	return nil
}
