package main

import (
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// outagePolicy trips a circuit at its first failed call (2 attempts, trip
// after 2) and opens it for 300ms, doubling: a few seconds of outage see
// several probes.
var outagePolicy = []string{"--attempts", "2", "--backoff", "5ms", "--max-delay", "10ms",
	"--trip-after", "2", "--open-for", "300ms", "--open-max", "5m"}

// outageLineBound is what the whole outage may print on stderr, across
// every job of both circuits: per circuit, the first wave's two failing
// jobs (a "failed" line each, and one "circuit opened"), and the one
// "circuit closed" of the probe that finds the upstream back. Failed probes
// and skips print nothing by default.
const outageLineBound = 2 * (2 + 1 + 1)

// weatherForCurl serves the fake weather API on 127.0.0.1 until the test
// ends, for curl: its path, the API to take down and bring up, and its URL.
func weatherForCurl(t *testing.T) (curl string, api *fakeapis.Server, url string) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		testenv.Skip(t, "curl is not installed")
	}
	api = fakeapis.New("key", "token")
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return curl, api, srv.URL + "/weather"
}

// TestAnOutageSeenByManyCronJobsPrintsAHandfulOfLines drives an outage as
// cron sees one: waves of jobs (two `call`, two `run -- curl`), the
// upstream down for several probes of each circuit, then up again until
// both circuits have closed. The stderr lines of every job together stay
// within outageLineBound, and a success, at the first attempt or after a
// retry, prints nothing.
func TestAnOutageSeenByManyCronJobsPrintsAHandfulOfLines(t *testing.T) {
	testenv.Heavy(t) // many cron jobs through an outage; TestRunCronOutageMailsFromAtMostThreeRuns is the quick one
	t.Parallel()
	curl, api, url := weatherForCurl(t)
	state := t.TempDir()
	job := map[string][]string{
		"call": append(append([]string{"call", "--url", url}, outagePolicy...), "weather-api"),
		// curl -s: it writes no error lines, so the bound is on what fusebox
		// prints (TestRunCronOutageMailsFromAtMostThreeRuns counts curl's).
		"run": testenv.RunArgs("weather-cmd", outagePolicy, curl, "-fs", url),
	}

	// Quiet successes: at the first attempt, and after a retried failure.
	for _, kind := range []string{"call", "run"} {
		for _, failFirst := range []bool{false, true} {
			if failFirst {
				api.FailNext(fakeapis.Weather, 1)
			}
			if p := fb(t, state, job[kind]...); p.Code != 0 || p.Stderr != "" {
				t.Errorf("%s, first attempt failing %v: exit %d, stderr %q; want 0 and nothing", kind, failFirst, p.Code, p.Stderr)
			}
		}
	}

	var lines []string
	jobs := 0
	wave := func() {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, kind := range []string{"call", "call", "run", "run"} {
			wg.Go(func() {
				cmd := fbCmd(state, nil, job[kind]...)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run() // exit 0, 75 or a failure's: stderr says which mattered
				mu.Lock()
				defer mu.Unlock()
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					lines = append(lines, kind+": cannot run fusebox: "+err.Error())
				}
				jobs++
				for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
					if l != "" {
						lines = append(lines, kind+": "+l)
					}
				}
			})
		}
		wg.Wait()
	}

	api.Down(fakeapis.Weather)
	wave()
	firstWave := api.Hits(fakeapis.Weather)
	// Every later request is a probe (one per open period per circuit):
	// wait for three of each circuit's, 300ms + 600ms + 1.2s of outage.
	for i := 0; api.Hits(fakeapis.Weather)-firstWave < 6; i++ {
		if i == 2000 {
			t.Fatalf("after %d waves only %d probes", i, api.Hits(fakeapis.Weather)-firstWave)
		}
		wave()
	}
	probes := api.Hits(fakeapis.Weather) - firstWave

	api.Up(fakeapis.Weather)
	for i := 0; statusOf(t, state, "weather-api")["state"] != "closed" || statusOf(t, state, "weather-cmd")["state"] != "closed"; i++ {
		if i == 2000 {
			t.Fatal("the circuits never closed")
		}
		wave()
	}
	before := len(lines)
	for range 3 {
		wave()
	}
	if len(lines) != before {
		t.Errorf("healthy waves after the outage printed:\n%s", strings.Join(lines[before:], "\n"))
	}

	report := fmt.Sprintf("%d jobs, %d failed probes, %d stderr lines:\n%s", jobs, probes, len(lines), strings.Join(lines, "\n"))
	t.Log(report)
	if len(lines) > outageLineBound {
		t.Errorf("want at most %d lines: %s", outageLineBound, report)
	}
	for _, want := range []string{"circuit opened", "circuit closed", "msg=failed", `msg="weather-api: `, "status 503"} {
		if !strings.Contains(report, want) {
			t.Errorf("no line says %q: %s", want, report)
		}
	}
	for _, quiet := range []string{"skipped", "attempt failed", "reopened"} {
		if strings.Contains(strings.Join(lines, "\n"), quiet) {
			t.Errorf("a %q line printed by default: %s", quiet, report)
		}
	}
}
