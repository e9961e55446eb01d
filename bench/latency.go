package main

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/manycircuits"
)

// Whole-process latency: every contender is run Runs times, interleaved in a
// shuffled order each round so that the machine's noise falls on all of them
// alike, and timed from fork to exit.

type latencyContender struct {
	Name   string
	Argv   []string
	Want   int          // the exit status that means it did what it should
	Env    []string     // nil: the scenario's
	Before func() error // nil, or set up before each run, untimed
	Every  int          // run in every Every-th pass only (0: every pass)
}

// The contenders the targets are computed from, by name.
const (
	cTrue      = "/bin/true"
	cHello     = "static Go hello-world (floor)"
	cBash      = "classic bash check, open"
	cFloor     = "fusebox exiting at the top of main"
	cOpen      = "fusebox run, open (fail fast)"
	cHealthy   = "fusebox run -- true, closed"
	cOne       = "fusebox run -- true, closed, one-circuit config"
	cTwenty    = "fusebox run -- true, closed, 20-circuit config"
	cFallback  = "fusebox call, primary open → fallback"
	cCurl      = "curl the fallback directly"
	cRedis     = "fusebox run, open (fail fast), Redis store"
	cJobTwenty = "fusebox run job-4, open, 20-circuit config"
	cJobAlone  = "fusebox run job-4, open, a config of job-4 alone"
	cGCDue     = "fusebox run -- true, closed, 10,000 circuits, the hourly GC due"
	cGCDone    = "fusebox run -- true, closed, 10,000 circuits, the hourly GC done"
)

// gcCircuits is the state dir the hourly GC's cost is timed on: each
// circuit has a state, counts and an event, none old enough to remove, as
// a household with many devices and a long-lived config has.
const gcCircuits = 10_000

// writeGCDir writes gcCircuits circuits into dir, each with a state (one
// failure), an event and counts: what the hourly GC scans.
func writeGCDir(dir string) error {
	s, err := file.Open(dir, file.WithFsync(false))
	if err != nil {
		return err
	}
	defer s.Close()
	if err := manycircuits.Write(context.Background(), s, gcCircuits, time.Now().UTC()); err != nil {
		return fmt.Errorf("write the GC's state dir: %w", err)
	}
	return nil
}

// gcMarkAged sets the mtime of the store's GC mark (DIR/.gc, file/gc.go)
// to age ago: two hours makes the next success run the hourly GC, none
// makes it skip it.
func gcMarkAged(dir string, age time.Duration) func() error {
	return func() error {
		mark := filepath.Join(dir, ".gc")
		if err := os.WriteFile(mark, nil, 0o600); err != nil {
			return err
		}
		t := time.Now().Add(-age)
		return os.Chtimes(mark, t, t)
	}
}

// gcRuns is how many runs the GC pair gets at most: a due GC takes a
// scan of every circuit, and a full run of them would take minutes.
const gcRuns = 30

type latencyResult struct {
	Name        string
	Median, P99 time.Duration
	Times       []time.Duration // run by run: the i-th of every contender ran in the same shuffled pass
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

// twentyCircuits is a household's config: twenty circuits, half of them
// HTTP endpoints with a jq check and an extraction, one of them the
// healthy run's, and a chain. A run reads the top of it and its own
// circuit (config.LoadForRun parses the whole file and decodes only that
// circuit): what this row adds over the one-circuit config is the parse
// of the other nineteen.
func twentyCircuits() string {
	var b strings.Builder
	b.WriteString("defaults:\n  attempts: 3\n  timeout: 10s\ncircuits:\n  healthy:\n    attempts: 2\n")
	for i := 1; i < 20; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&b, "  job-%d:\n    attempts: %d\n    open_for: %dm\n", i, 2+i%3, i)
			continue
		}
		fmt.Fprintf(&b, "  api-%d:\n    http:\n      url: http://127.0.0.1:%d/v1/sensor/%d\n", i, 8000+i, i)
		b.WriteString("      headers: {Accept: application/json}\n")
		b.WriteString("      expect: {status: [200], jq: '.ok == true and (.items | length) > 0'}\n")
		b.WriteString("      extract: '.items[0].value'\n")
	}
	b.WriteString("chains:\n  sensors: {endpoints: [api-1, api-3, api-5], stale: 1h}\n")
	return b.String()
}

// withConfig is env with FUSEBOX_CONFIG set to path.
func withConfig(env []string, path string) []string { return withVar(env, "FUSEBOX_CONFIG", path) }

// withVar returns env with the variable name set to value.
func withVar(env []string, name, value string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(out, name+"="+value)
}

// cronPath is the PATH cron gives a job (Debian's cron, and the POSIX
// default): the latency processes run with it, as cron's would. With this
// machine's own long PATH, finding `true` near its end cost the healthy run
// failed stats (d141d6d's session) that the /bin/true row, which looks
// nothing up, did not pay.
const cronPath = "/usr/bin:/bin"

// buildFloor builds fusebox with -tags fusebox_exitatmain: the same binary
// that exits at the top of main (cmd/fusebox/exitatmain.go).
func buildFloor(ctx context.Context, repo, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "fusebox_exitatmain", "-o", out, "./cmd/fusebox")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build the exit-at-main floor: %v\n%s", err, b)
	}
	return nil
}

// install copies the program at src into dir with write(2), as a package
// manager or cp installs it, and returns the copy's path. The Go linker
// writes its output through mmap, and on this machine (ext4, Linux 6.x) a
// process of the file it wrote started slower than one of the same bytes
// written by write(2) (2db6eea's session): the latency contenders are timed
// as installed.
func install(src, dir string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	dst := filepath.Join(dir, filepath.Base(src)+"-installed")
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(struct{ io.Writer }{out}, in); err != nil { // a plain Writer: no copy_file_range
		out.Close()
		return "", fmt.Errorf("install %s: %w", src, err)
	}
	return dst, out.Close()
}

// latencySetup opens the circuits, writes the configs and the bash
// breaker's file, builds the exit-at-main floor, installs the binaries
// (see install), and returns the contenders. stop shuts the local HTTP
// server down.
func latencySetup(ctx context.Context, t *tools, repo, dir string, runs int) (cs []latencyContender, env []string, stop func(), err error) {
	built := filepath.Join(dir, "fusebox-exit-at-main")
	if err := buildFloor(ctx, repo, built); err != nil {
		return nil, nil, nil, err
	}
	var fb, hello, floor string
	for _, p := range []struct {
		dst *string
		src string
	}{{&fb, t.fusebox}, {&hello, t.hello}, {&floor, built}} {
		if *p.dst, err = install(p.src, dir); err != nil {
			return nil, nil, nil, err
		}
	}
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
	env = withVar(isolatedEnv(dir), "PATH", cronPath)
	for _, name := range []string{"open-circuit", "primary", "job-4"} {
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
	one, twenty, job4 := filepath.Join(dir, "one.yaml"), filepath.Join(dir, "twenty.yaml"), filepath.Join(dir, "job-4.yaml")
	if err := os.WriteFile(one, []byte("defaults:\n  attempts: 3\n  timeout: 10s\ncircuits:\n  healthy:\n    attempts: 2\n"), 0o600); err != nil {
		stop()
		return nil, nil, nil, err
	}
	if err := os.WriteFile(job4, []byte("defaults:\n  attempts: 3\n  timeout: 10s\ncircuits:\n  job-4:\n    attempts: 3\n    open_for: 4m\n"), 0o600); err != nil {
		stop()
		return nil, nil, nil, err
	}
	if err := os.WriteFile(twenty, []byte(twentyCircuits()), 0o600); err != nil {
		stop()
		return nil, nil, nil, err
	}
	gcDir := filepath.Join(dir, "gc-state")
	log.Printf("latency: writing %d circuits for the hourly GC", gcCircuits)
	if err := writeGCDir(gcDir); err != nil {
		stop()
		return nil, nil, nil, err
	}
	gcEnv := withVar(env, "FUSEBOX_STATE_DIR", gcDir)
	every := max((runs+gcRuns-1)/gcRuns, 1)
	healthy := []string{fb, "run", "healthy", "--", "true"}
	cs = []latencyContender{
		{Name: cTrue, Argv: []string{"/bin/true"}},
		{Name: cHello, Argv: []string{hello}},
		{Name: cBash, Argv: []string{"bash", t.script, "open-circuit", base + "/primary"}, Want: 75},
		{Name: cFloor, Argv: []string{floor, "run", "open-circuit", "--", "true"}},
		{Name: cOpen, Argv: []string{fb, "run", "open-circuit", "--", "true"}, Want: 75},
		{Name: cHealthy, Argv: healthy},
		{Name: cOne, Argv: healthy, Env: withConfig(env, one)},
		{Name: cTwenty, Argv: healthy, Env: withConfig(env, twenty)},
		{Name: cJobTwenty, Argv: []string{fb, "run", "job-4", "--", "true"}, Env: withConfig(env, twenty), Want: 75},
		{Name: cJobAlone, Argv: []string{fb, "run", "job-4", "--", "true"}, Env: withConfig(env, job4), Want: 75},
		{Name: cFallback, Argv: []string{fb, "call", "lookup"}},
		{Name: cCurl, Argv: []string{"curl", "-fsS", base + "/fallback"}},
		{Name: cGCDue, Argv: healthy, Env: gcEnv, Before: gcMarkAged(gcDir, 2*time.Hour), Every: every},
		{Name: cGCDone, Argv: healthy, Env: gcEnv, Before: gcMarkAged(gcDir, 0), Every: every},
	}
	for _, c := range cs {
		if c.Env == nil {
			continue
		}
		// The config must load, or the run measures the fallback to defaults.
		check := exec.Command(fb, "validate")
		check.Env = c.Env
		if out, err := check.CombinedOutput(); err != nil {
			stop()
			return nil, nil, nil, fmt.Errorf("%s: fusebox validate: %v\n%s", c.Name, err, out)
		}
	}
	return cs, env, stop, nil
}

// redisContender starts a redis-server, trips the fail-fast run's circuit
// in it and returns the fail-fast run against it; stop stops the server.
func redisContender(ctx context.Context, cs []latencyContender, env []string) (latencyContender, func(), error) {
	i := slices.IndexFunc(cs, func(c latencyContender) bool { return c.Name == cOpen })
	url, stop, err := startRedis(ctx)
	if err != nil {
		return latencyContender{}, nil, err
	}
	renv := withVar(env, "FUSEBOX_STATE_DIR", url)
	trip := exec.Command(cs[i].Argv[0], "trip", "--new", "open-circuit", "--for", "24h")
	trip.Env = renv
	if out, err := trip.CombinedOutput(); err != nil {
		stop()
		return latencyContender{}, nil, fmt.Errorf("fusebox trip on Redis: %v\n%s", err, out)
	}
	return latencyContender{Name: cRedis, Argv: cs[i].Argv, Env: renv, Want: 75}, stop, nil
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
			if c.Every > 1 && round%c.Every != 0 {
				continue
			}
			if c.Before != nil {
				if err := c.Before(); err != nil {
					return nil, fmt.Errorf("%s: %w", c.Name, err)
				}
			}
			cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
			cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, devnull, devnull, devnull
			if c.Env != nil {
				cmd.Env = c.Env
			}
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
		res[k] = latencyResult{Name: c.Name, Median: median(times[k]), P99: p99(times[k]), Times: times[k]}
	}
	return res, nil
}

func latencyRound(ctx context.Context, t *tools, repo string, runs int, outDir string) (roundResult, error) {
	dir, err := newScratch(t.work, "latency")
	if err != nil {
		return roundResult{}, err
	}
	cs, env, stop, err := latencySetup(ctx, t, repo, dir, runs)
	if err != nil {
		return roundResult{}, err
	}
	defer stop()
	var notes string
	switch rc, stopRedis, err := redisContender(ctx, cs, env); {
	case errors.Is(err, errNoRedis):
		log.Printf("latency: SKIPPING the Redis store: %v", err)
		notes = fmt.Sprintf("\n- **The Redis fail-fast run was not run**: %v.\n", err)
	case err != nil:
		return roundResult{}, err
	default:
		defer stopRedis()
		cs = append(cs, rc)
	}
	log.Printf("latency: %d contenders, %d runs each, interleaved", len(cs), runs)
	res, err := runLatency(ctx, cs, env, runs)
	if err != nil {
		return roundResult{}, err
	}
	inits := initRuns(runs)
	log.Printf("latency: package init, %d runs with GODEBUG=inittrace=1", inits)
	var failFast []string
	for _, c := range cs {
		if c.Name == cOpen {
			failFast = c.Argv
		}
	}
	table, err := initTable(ctx, failFast[0], env, inits)
	if err != nil {
		return roundResult{}, err
	}

	byName := map[string]latencyResult{}
	for _, r := range res {
		byName[r.Name] = r
	}
	hello := byName[cHello].Median
	chart := BarChart{Title: "Whole-process latency: median, whisker to p99", Unit: "milliseconds",
		Note: fmt.Sprintf("%d interleaved runs each, fork to exit", runs)}
	var rows [][]string
	for _, r := range res {
		rows = append(rows, []string{r.Name, fmtMs(r.Median), fmtMs(r.P99), fmtRatio(ratio(float64(r.Median), float64(hello)))})
		chart.Bars = append(chart.Bars, Bar{Label: r.Name, Value: ms(r.Median), Whisker: ms(r.P99)})
	}
	if err := writeChart(filepath.Join(outDir, "bench-latency.svg"), chart); err != nil {
		return roundResult{}, err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d runs of each, interleaved in a shuffled order each round, timed from fork to exit. "+
		"Every fusebox run has the two-circuit config of `fusebox call`'s chain and the file store unless its row names another; "+
		"the exit-at-main floor is the same binary built with `-tags fusebox_exitatmain`. "+
		"Every binary is timed as installed: copied with write(2), not as the Go linker left it.\n\n", runs)
	b.WriteString(mdTable([]string{"process", "median", "p99", "median / hello-world"}, "lrrr", rows))
	b.WriteString(notes)
	b.WriteString("\n![latency](bench-latency.svg)\n\n")
	b.WriteString(table)
	return roundResult{Detail: b.String(), Figures: latencyFigures(byName)}, nil
}

// latencyFigures are issue 29's targets, and issue 5's and issue 14's that
// stand, from medians of one round; then the paired ratios (the median,
// pass by pass, of one process's time over the other's in the same
// shuffled pass) and the margins the prose quotes.
func latencyFigures(by map[string]latencyResult) []figure {
	m := func(name string) float64 { return float64(by[name].Median) }
	paired := func(a, b string) float64 {
		var rs []float64
		for i := range by[a].Times {
			rs = append(rs, ratio(float64(by[a].Times[i]), float64(by[b].Times[i])))
		}
		return medianOf(rs)
	}
	signed := func(v float64) string { return signedMs(time.Duration(v)) }
	figs := []figure{
		{Key: "open/hello", Label: "fail-fast run ≤3.5x the static hello-world", Value: ratio(m(cOpen), m(cHello)), Format: fmtRatio, Met: atMost(3.5)},
		{Key: "floor/hello", Label: "exit-at-main floor ≤2.1x the static hello-world", Value: ratio(m(cFloor), m(cHello)), Format: fmtRatio, Met: atMost(2.1)},
		{Key: "healthy over", Label: "healthy run ≤ fail-fast run + `/bin/true` + 0.3 ms (its excess over the two)", Value: m(cHealthy) - m(cOpen) - m(cTrue), Format: signed,
			Met: atMost(float64(300 * time.Microsecond))},
		{Key: "twenty/one", Label: "healthy run with a 20-circuit config ≤1.25x with a one-circuit config", Value: ratio(m(cTwenty), m(cOne)), Format: fmtRatio, Met: atMost(1.25)},
		{Key: "open/bash", Label: "fail-fast run ≤0.5x the classic bash check's time", Value: ratio(m(cOpen), m(cBash)), Format: fmtRatio, Met: atMost(0.5)},
		{Key: "call/curl", Label: "`fusebox call` with its primary open, against curling the fallback directly", Value: ratio(m(cFallback), m(cCurl)), Format: fmtRatio,
			Note: "(no target)"},
		{Key: "open over floor", Value: m(cOpen) - m(cFloor), Format: signed},
		{Key: "bash/hello", Value: ratio(m(cBash), m(cHello)), Format: fmtRatio},
		{Key: "paired open/hello", Value: paired(cOpen, cHello), Format: fmtRatio},
		{Key: "paired open/bash", Value: paired(cOpen, cBash), Format: fmtRatio},
		{Key: "paired twenty/one", Value: paired(cTwenty, cOne), Format: fmtRatio},
		{Key: "paired floor/hello", Value: paired(cFloor, cHello), Format: fmtRatio},
		{Key: "job twenty/alone", Value: paired(cJobTwenty, cJobAlone), Format: fmtRatio},
		{Key: "gc/done", Label: "a healthy run at 10,000 circuits that runs the hourly GC, against one that finds it done (paired)",
			Value: paired(cGCDue, cGCDone), Format: fmtRatio, Note: "(no target: what the hourly GC costs the run that finds it due)"},
		{Key: "gc cost", Value: m(cGCDue) - m(cGCDone), Format: fmtDur},
		{Key: "gc done", Value: m(cGCDone), Format: fmtDur},
	}
	if _, ok := by[cRedis]; ok {
		figs = append(figs, figure{Key: "redis/file", Label: "a Redis fail-fast run ≤1.2x the file store's (paired)", Value: paired(cRedis, cOpen), Format: fmtRatio, Met: atMost(1.2)})
	}
	return figs
}

// latencyProse is what the latency rounds show.
func latencyProse(s summary) string {
	return fmt.Sprintf("The fail-fast run took %s over the exit-at-main floor, and the floor %s the static hello-world before fusebox does anything of its own. "+
		"Paired pass by pass (each process's time over the other's in the same shuffled pass, the median of those ratios), "+
		"the fail-fast run was %s the hello-world, the floor %s, the fail-fast run %s the classic bash check's time, "+
		"and a healthy run with the 20-circuit config %s one with the one-circuit config. "+
		"The bash check itself took %s the hello-world, and the healthy run %s over the fail-fast run and `/bin/true` together. "+
		"At 10,000 circuits the hourly GC cost the one healthy run an hour that finds it due %s more than the same run without it (%s), "+
		"%s that run's time, paired. A fail-fast run of `job-4` with the 20-circuit config took %s the time of one with a config of `job-4` alone, paired.%s",
		s.get("open over floor"), s.get("floor/hello"), s.get("paired open/hello"), s.get("paired floor/hello"),
		s.get("paired open/bash"), s.get("paired twenty/one"), s.get("bash/hello"), s.get("healthy over"),
		s.get("gc cost"), s.get("gc done"), s.get("gc/done"), s.get("job twenty/alone"), redisSentence(s))
}

// redisSentence is the Redis fail-fast run's part of the prose, or says it
// was skipped.
func redisSentence(s summary) string {
	if !s.has("redis/file") {
		return " The Redis store was not measured: redis-server is not installed."
	}
	return " A fail-fast run against a local redis-server took " + s.get("redis/file") + " the time of one against the file store, paired."
}

// signedMs prints a difference of medians: "+0.42 ms", "-0.05 ms".
func signedMs(d time.Duration) string {
	if d < 0 {
		return "-" + fmtMs(-d)
	}
	return "+" + fmtMs(d)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
