package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/internal/budgetlog"
	"github.com/fusebox-hq/fusebox/internal/redistest"
)

// The storm retry_budget is for: 40 processes calling a dead (503) upstream
// at once, five attempts each, the breaker kept out of it. Without a
// budget they send 200 requests; with retry_budget 20% (min 3) the host's
// retries are at most 20% of the 40 first attempts plus 3, so the upstream
// sees at most 40 + 11. The window is an hour here, not the default 10s,
// so that the bound holds however slowly a saturated machine starts the
// processes: with 10s, first attempts spread over more than one window
// earn retries in each.
const (
	stormProcs    = 40
	stormAttempts = 5
)

var stormBudget = fusebox.RetryBudget{Percent: 0.2, Min: 3, Window: 60 * 60e9}

func TestRetryBudgetBoundsAStormOfProcesses(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	requests := stormWithBudget(t, base, func(args ...string) *exec.Cmd { return fbCmd(state, nil, args...) })
	if f := statusOf(t, state, "api")["total_failures"]; f != float64(requests) {
		t.Errorf("the circuit counted %v failures for %d requests sent: a retry the budget refused must count none", f, requests)
	}
}

func TestRedisRetryBudgetBoundsAStormOverTwoHosts(t *testing.T) {
	srv := redistest.Start(t)
	hosts := []host{newHost(t, srv), newHost(t, srv)}
	n := 0
	requests := stormWithBudget(t, t.TempDir(), func(args ...string) *exec.Cmd {
		n++
		h := hosts[n%2]
		cmd := h.cmd(args...)
		cmd.Env = append(cmd.Env, "FUSEBOX_CONFIG="+configEnv(args))
		return cmd
	})
	for _, h := range hosts {
		h.neverFellBack(t)
	}
	if got := outcomes(t, newHost(t, srv), "api"); got != requests {
		t.Errorf("redis counted %d outcomes of the circuit for %d requests sent: a retry the budget refused must count none", got, requests)
	}
}

// configEnv is the --config argument of args: the redis hosts take it from
// the environment like the rest of their setup.
func configEnv(args []string) string {
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// stormWithBudget runs the storm with commands from newCmd and checks the
// upstream's count against the budget's formula. It returns the requests
// the upstream saw.
func stormWithBudget(t *testing.T, dir string, newCmd func(args ...string) *exec.Cmd) int {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	cfg := writeConfigPath(t, dir, fmt.Sprintf(`circuits:
  api:
    http: {url: %q}
    attempts: %d
    backoff: 20ms
    jitter: none
    trip_after: 100000
    retry_budget: {percent: %g%%, min: %d, window: %s}
`, srv.URL, stormAttempts, stormBudget.Percent*100, stormBudget.Min, stormBudget.Window))

	cmds := make([]*exec.Cmd, stormProcs)
	stderr := make([]bytes.Buffer, stormProcs)
	for i := range cmds {
		cmds[i] = newCmd("--config", cfg, "call", "api")
		cmds[i].Stderr = &stderr[i]
	}
	var wg sync.WaitGroup
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { cmd.Wait() })
	}
	wg.Wait()

	retries := budgetlog.Allowed(stormBudget, stormProcs)
	bound := stormProcs + retries
	refusal := regexp.MustCompile(`retry budget exhausted: (\d+) retries for (\d+) first attempts in 1h0m0s`)
	refused := 0
	for i, cmd := range cmds {
		if code := cmd.ProcessState.ExitCode(); code != exitUnavailable {
			t.Errorf("process %d: exit %d, want %d (the call failed):\n%s", i, code, exitUnavailable, stderr[i].String())
		}
		m := refusal.FindStringSubmatch(stderr[i].String())
		if m == nil {
			continue
		}
		refused++
		if n, _ := strconv.Atoi(m[1]); n > retries {
			t.Errorf("process %d was refused at %d retries, past the %d allowed: %s", i, n, retries, m[0])
		}
	}
	got := int(requests.Load())
	switch {
	case got > bound:
		t.Errorf("%d processes of %d attempts with retry_budget %+v sent %d requests to the dead upstream, want at most %d (%d first attempts + 20%% of them + %d); %d processes were refused",
			stormProcs, stormAttempts, stormBudget, got, bound, stormProcs, stormBudget.Min, refused)
	case got < stormProcs:
		t.Errorf("the upstream saw %d requests, fewer than the %d first attempts: a first attempt was refused or lost", got, stormProcs)
	case refused == 0:
		t.Errorf("no process said the budget refused it (%d requests sent); stderr of the first:\n%s", got, stderr[0].String())
	}
	t.Logf("%d processes x %d attempts, retry_budget %+v: %d requests (bound %d, %d without a budget); %d processes refused a retry",
		stormProcs, stormAttempts, stormBudget, got, bound, stormProcs*stormAttempts, refused)
	return got
}
