package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The storm: an upstream on 127.0.0.1 answers 503 for the first DownTicks
// ticks and 200 after; Jobs jobs fire together at the start of every tick, as
// cron would, for Ticks ticks. Each contender runs the whole script once, on a
// fresh upstream and fresh state.

type stormConfig struct {
	Scale     Scale
	Ticks     int // the script's length
	DownTicks int // the upstream answers 503 before this tick, 200 from it on
	Jobs      int // jobs fired together each tick
}

func defaultStorm(tick time.Duration) stormConfig {
	return stormConfig{Scale: Scale{Tick: tick}, Ticks: 30, DownTicks: 20, Jobs: 6}
}

// stormContender is one way of calling the upstream from a cron job.
type stormContender struct {
	Name string
	// Argv returns the job's command line for the upstream url.
	Argv func(url string) []string
	Env  []string // added to isolatedEnv
	// Config, when set, is the fusebox config file's content; ConfigFor,
	// when set, makes it from the upstream's URL instead.
	Config    string
	ConfigFor func(url string) string
	// Daemon, when set, is run for the whole storm beside the jobs (fusebox
	// serve), and stopped with SIGTERM after it.
	Daemon []string
	// Diagnostic contenders show where time goes; no target applies to them.
	Diagnostic bool
	// Missing, when set, says why the contender cannot run on this machine.
	Missing string
}

func stormContenders(t *tools, sc Scale) []stormContender {
	curl := stormContender{
		Name: "curl --retry 2",
		Argv: func(url string) []string { return []string{"curl", "-fsS", "--retry", "2", url} },
		Env:  []string{"LD_PRELOAD=" + t.faketime, "FAKETIME=" + sc.FaketimeRate()},
	}
	if t.faketime == "" {
		curl.Missing = "libfaketime is not installed (apt-get install libfaketime): curl's whole-second waits cannot be scaled"
	}
	flags := sc.FuseboxFlags()
	return []stormContender{
		{
			Name: "classic bash",
			Argv: func(url string) []string { return []string{"bash", t.script, "upstream", url} },
			Env:  []string{fmt.Sprintf("CB_SCALE=%d", sc.Factor())},
		},
		curl,
		{
			Name: "fusebox run",
			Argv: func(url string) []string {
				return append(append([]string{t.fusebox, "run"}, flags...), "upstream", "--", "curl", "-fsS", url)
			},
		},
		{
			Name:       "fusebox run, fsync: false",
			Config:     "fsync: false\n",
			Diagnostic: true,
			Argv: func(url string) []string {
				return append(append([]string{t.fusebox, "run"}, flags...), "upstream", "--", "curl", "-fsS", url)
			},
		},
		{
			Name: "fusebox call",
			Argv: func(url string) []string {
				return append(append([]string{t.fusebox, "call"}, flags...), "--url", url, "upstream")
			},
		},
		{
			// The budget's window is real time (10 s, ten ticks), not
			// scaled: scaled, it would be shorter than one tick.
			Name:       "fusebox call, retry_budget 20%",
			Diagnostic: true,
			Argv: func(url string) []string {
				return append(append([]string{t.fusebox, "call"}, flags...), "--retry-budget=20%", "--url", url, "upstream")
			},
		},
		{
			Name:      "fusebox call + serve health checks",
			ConfigFor: func(url string) string { return sc.FuseboxConfig(url, healthInterval(sc)) },
			Daemon:    []string{t.fusebox, "serve", "--listen", "127.0.0.1:0"},
			Argv:      func(string) []string { return []string{t.fusebox, "call", "upstream"} },
		},
	}
}

// healthInterval is the daemon's health check interval in the storm: a
// quarter of a tick (15 s of the cron world).
func healthInterval(sc Scale) time.Duration { return sc.Tick / 4 }

// jobResult is one job's outcome; Start is since the storm's tick 0.
type jobResult struct {
	Tick  int
	Start time.Duration
	Dur   time.Duration
	Exit  int
}

// request is one request that reached the upstream; At is since tick 0.
type request struct {
	At   time.Duration
	Down bool
}

type stormRun struct {
	Jobs     []jobResult
	Requests []request
}

// upstream answers as the storm's script says and records every request.
type upstream struct {
	t0   time.Time
	down time.Duration // from t0
	mu   sync.Mutex
	reqs []request
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	at := time.Since(u.t0)
	down := at < u.down
	u.mu.Lock()
	u.reqs = append(u.reqs, request{At: at, Down: down})
	u.mu.Unlock()
	if down {
		http.Error(w, "down for the storm", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// runStorm plays the script against one contender, with its state in dir;
// dir/jobs.log collects the jobs' stderr.
func runStorm(ctx context.Context, cfg stormConfig, c stormContender, dir string) (stormRun, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stormRun{}, fmt.Errorf("listen: %w", err)
	}
	tick := cfg.Scale.Tick
	// Tick 0 starts a little later, so the first jobs start on time.
	up := &upstream{t0: time.Now().Add(200 * time.Millisecond), down: time.Duration(cfg.DownTicks) * tick}
	srv := &http.Server{Handler: up, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/health"

	logf, err := os.OpenFile(filepath.Join(dir, "jobs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return stormRun{}, err
	}
	defer logf.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return stormRun{}, err
	}
	defer devnull.Close()
	env := append(isolatedEnv(dir), c.Env...)
	argv := c.Argv(url)
	if c.ConfigFor != nil {
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(c.ConfigFor(url)), 0o600); err != nil {
			return stormRun{}, err
		}
	}
	if len(c.Daemon) > 0 {
		stop, err := startDaemon(ctx, c.Daemon, env, filepath.Join(dir, "daemon.log"))
		if err != nil {
			return stormRun{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		defer stop()
	}

	var (
		mu   sync.Mutex
		jobs []jobResult
		wg   sync.WaitGroup
		errs []error
	)
	for i := range cfg.Ticks {
		at := up.t0.Add(time.Duration(i) * tick)
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			wg.Wait()
			return stormRun{}, ctx.Err()
		}
		for range cfg.Jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Env, cmd.Stdout, cmd.Stderr = env, devnull, logf
				start := time.Now()
				err := cmd.Run()
				r := jobResult{Tick: i, Start: start.Sub(up.t0), Dur: time.Since(start), Exit: exitStatus(err)}
				mu.Lock()
				defer mu.Unlock()
				jobs = append(jobs, r)
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					errs = append(errs, err)
				}
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return stormRun{}, fmt.Errorf("%s: %w", c.Name, errors.Join(errs...))
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	run := stormRun{Jobs: jobs, Requests: up.reqs}
	return run, writeJobs(filepath.Join(dir, "jobs.tsv"), run)
}

// startDaemon runs argv (fusebox serve) with its stderr in logPath until
// stop, waiting until it says it serves.
func startDaemon(ctx context.Context, argv, env []string, logPath string) (stop func(), err error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Stderr = env, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM) // the daemon we started, by its PID
		cmd.Wait()
		logf.Close()
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "serving on") {
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("the daemon did not start: %s", b)
		}
	}
}

// writeJobs keeps every job's figures beside its log, for a closer look
// with -keep.
func writeJobs(path string, run stormRun) error {
	var b strings.Builder
	b.WriteString("tick\tstart_ms\tdur_ms\texit\n")
	for _, j := range run.Jobs {
		fmt.Fprintf(&b, "%d\t%.1f\t%.2f\t%d\n", j.Tick, ms(j.Start), ms(j.Dur), j.Exit)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// stormSummary is what the report shows of one contender's storm.
type stormSummary struct {
	Name                       string
	Diagnostic                 bool // no target applies
	Requests, RequestsDown     int
	PerTick                    []int // requests that arrived during each tick
	TotalWall, Slowest         time.Duration
	Succeeded, Skipped, Failed int
	// Time spent by jobs that succeeded, skipped and failed.
	OKWall, SkipWall, FailWall time.Duration
	// RecoveryTicks is how many ticks after the upstream's recovery the first
	// tick came from which every job succeeded (-1: none in the run).
	RecoveryTicks int
	// FirstOK is how long after the upstream's recovery the first request
	// reached it (a probe, a job or a health check: the moment the circuit
	// can close); -1 when none did.
	FirstOK time.Duration
}

// summarize reduces a storm run to the report's figures. Exit 75 is a skip
// (both fusebox and the classic script use it); any other non-zero status is
// a failure.
func summarize(name string, cfg stormConfig, run stormRun) stormSummary {
	s := stormSummary{Name: name, PerTick: make([]int, cfg.Ticks), RecoveryTicks: -1, FirstOK: -1}
	back := time.Duration(cfg.DownTicks) * cfg.Scale.Tick
	for _, r := range run.Requests {
		if !r.Down && (s.FirstOK < 0 || r.At-back < s.FirstOK) {
			s.FirstOK = r.At - back
		}
		s.Requests++
		if r.Down {
			s.RequestsDown++
		}
		t := max(0, int(r.At/cfg.Scale.Tick))
		for t >= len(s.PerTick) {
			s.PerTick = append(s.PerTick, 0)
		}
		s.PerTick[t]++
	}
	allOK := make([]bool, cfg.Ticks)
	for i := range allOK {
		allOK[i] = true
	}
	for _, j := range run.Jobs {
		s.TotalWall += j.Dur
		s.Slowest = max(s.Slowest, j.Dur)
		switch j.Exit {
		case 0:
			s.Succeeded++
			s.OKWall += j.Dur
		case 75:
			s.Skipped++
			s.SkipWall += j.Dur
		default:
			s.Failed++
			s.FailWall += j.Dur
		}
		if j.Exit != 0 && j.Tick < len(allOK) {
			allOK[j.Tick] = false
		}
	}
	for t := cfg.Ticks - 1; t >= cfg.DownTicks && allOK[t]; t-- {
		s.RecoveryTicks = t - cfg.DownTicks
	}
	return s
}
