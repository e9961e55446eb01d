package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The burst: Procs jobs start together against an upstream that answers 503
// throughout, Attempts attempts each, once: the retry storm a host's timers
// make when the thing they all call is down. It measures what a retry
// budget (retry_budget) saves over plain retries, next to a bash loop and to
// fusebox's breaker. It runs in real time (no scaling): a budget's window is
// real seconds.
type burstConfig struct {
	Procs, Attempts int
	Backoff         time.Duration // the first wait, doubling, no jitter
}

func defaultBurst() burstConfig {
	return burstConfig{Procs: 40, Attempts: 5, Backoff: 50 * time.Millisecond}
}

// burstContenders: a bash loop of curl, fusebox call with the breaker out of
// the way (trip_after far above the storm's failures), the same with
// retry_budget 20%, and fusebox call with the default breaker (trip_after 3).
func burstContenders(t *tools, bc burstConfig) []stormContender {
	waits := make([]string, bc.Attempts-1)
	for i := range waits {
		waits[i] = strconv.FormatFloat((bc.Backoff << i).Seconds(), 'f', -1, 64)
	}
	loop := `for w in ` + strings.Join(waits, " ") + ` ""; do curl -fsS "$1" && exit 0; [ -n "$w" ] && sleep "$w"; done; exit 1`
	flags := []string{"--attempts=" + strconv.Itoa(bc.Attempts), "--backoff=" + bc.Backoff.String(), "--jitter=none", "--timeout=2s"}
	call := func(extra ...string) func(string) []string {
		return func(url string) []string {
			args := append([]string{t.fusebox, "call"}, flags...)
			return append(append(args, extra...), "--url", url, "upstream")
		}
	}
	return []stormContender{
		{Name: "bash loop of curl", Argv: func(url string) []string { return []string{"bash", "-c", loop, "burst", url} }},
		{Name: "fusebox call, no breaker, no budget", Argv: call("--trip-after=100000")},
		{Name: "fusebox call, no breaker, retry_budget 20%", Argv: call("--trip-after=100000", "--retry-budget=20%")},
		{Name: "fusebox call, breaker (trip_after 3), no budget", Argv: call()},
	}
}

// burstRound runs each contender through the burst once.
func burstRound(ctx context.Context, t *tools, bc burstConfig) (roundResult, error) {
	// One tick long enough for every job: the jobs start at tick 0 only.
	cfg := stormConfig{Scale: Scale{Tick: time.Minute}, Ticks: 1, DownTicks: 1, Jobs: bc.Procs}
	var rows [][]string
	var figs []figure
	for i, c := range burstContenders(t, bc) {
		dir, err := newScratch(t.work, "burst-"+strconv.Itoa(i))
		if err != nil {
			return roundResult{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), nil, 0o600); err != nil {
			return roundResult{}, err
		}
		log.Printf("burst: %s (%d jobs of %d attempts)", c.Name, bc.Procs, bc.Attempts)
		start := time.Now()
		run, err := runStorm(ctx, cfg, c, dir)
		if err != nil {
			return roundResult{}, err
		}
		s := summarize(c.Name, cfg, run)
		until := time.Since(start) - 200*time.Millisecond
		rows = append(rows, []string{c.Name, strconv.Itoa(s.Requests), fmtSeconds(s.TotalWall), fmtMs(s.Slowest),
			fmtMs(until), fmt.Sprintf("%d / %d", s.Succeeded, s.Failed+s.Skipped)})
		figs = append(figs,
			figure{Key: c.Name + "/requests", Value: float64(s.Requests), Format: fmtCount},
			figure{Key: c.Name + "/until", Value: float64(until), Format: fmtDur})
		log.Printf("burst: %s: %d requests, total job time %s", c.Name, s.Requests, s.TotalWall.Round(time.Millisecond))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs start together; the upstream answers 503 throughout. %d attempts each, waits of %s doubling, no jitter; "+
		"fusebox jobs run `fusebox call --url` with one state dir. A budget of 20%% (min 3, window 10s) allows %d + 20%% of %d + 3 = %d requests at most.\n\n",
		bc.Procs, bc.Attempts, bc.Backoff, bc.Procs, bc.Procs, bc.Procs+bc.Procs/5+3)
	b.WriteString(mdTable([]string{"contender", "requests to the dead upstream", "total job wall time", "slowest job", "until the last job ended", "jobs ok / failed"}, "lrrrrr", rows))
	return roundResult{Detail: b.String(), Figures: figs}, nil
}

// burstProse is what the burst's rounds show.
func burstProse(s summary) string {
	return fmt.Sprintf("The dead upstream received %s requests from the bash loop, %s from `fusebox call` with neither a breaker nor a budget, "+
		"%s with the retry budget and %s with the breaker alone; the last job ended %s, %s, %s and %s after the start.",
		s.get("bash loop of curl/requests"), s.get("fusebox call, no breaker, no budget/requests"),
		s.get("fusebox call, no breaker, retry_budget 20%/requests"), s.get("fusebox call, breaker (trip_after 3), no budget/requests"),
		s.get("bash loop of curl/until"), s.get("fusebox call, no breaker, no budget/until"),
		s.get("fusebox call, no breaker, retry_budget 20%/until"), s.get("fusebox call, breaker (trip_after 3), no budget/until"))
}
