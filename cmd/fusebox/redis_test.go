package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/redistest"
)

// host is one machine sharing circuits through Redis: a local state dir of
// its own (its fallback), under a HOME of its own.
type host struct {
	local string // the state dir fusebox falls back to: $HOME/.local/state/fusebox
	env   []string
}

// newHost is a host on srv with a wide budget: on a machine as loaded as CI's,
// a command can miss the default 50 ms and fall back, which only the tests
// of the budget itself want.
func newHost(t *testing.T, srv *redistest.Server) host { return newHostAt(t, wide(srv)) }

func wide(srv *redistest.Server) string {
	return srv.URL() + "?dial_timeout=10s&read_timeout=10s&write_timeout=10s"
}

// newHostAt is a host with state at url. Its local dir is given as
// $STATE_DIRECTORY: the tests may run as root, whose default is /var/lib.
func newHostAt(t *testing.T, url string) host {
	home := t.TempDir()
	local := filepath.Join(home, "local-state")
	return host{local: local, env: []string{"HOME=" + home, "STATE_DIRECTORY=" + local, "FUSEBOX_STATE_DIR=" + url}}
}

// fb runs the fusebox binary on h.
func (h host) fb(t *testing.T, args ...string) proc {
	t.Helper()
	return fbEnv(t, filepath.Join(filepath.Dir(h.local), "unused"), h.env, args...)
}

func (h host) cmd(args ...string) *exec.Cmd {
	return fbCmd(filepath.Join(filepath.Dir(h.local), "unused"), h.env, args...)
}

func (h host) status(t *testing.T, name string) map[string]any {
	t.Helper()
	return statusOfEnv(t, h.local, h.env, name)
}

func statusOfEnv(t *testing.T, stateDir string, env []string, name string) map[string]any {
	t.Helper()
	p := inprocEnv(t, stateDir, env, "status", "--json", name)
	if p.code != 0 {
		t.Fatalf("status: exit %d: %s", p.code, p.stderr)
	}
	return decodeRow(t, p.stdout)
}

func (h host) neverFellBack(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(h.local); err == nil {
		t.Errorf("host fell back to its local state dir %s", h.local)
	}
}

func TestRedisAFailureOnOneHostTripsTheCircuitForTheOther(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newHost(t, srv), newHost(t, srv)
	policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "10m"}
	if p := a.fb(t, runArgs("zigbee", policy, "false")...); p.code != 1 {
		t.Fatalf("host a: exit %d, want the command's 1:\n%s", p.code, p.stderr)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	p := b.fb(t, runArgs("zigbee", policy, "touch", ran)...)
	if p.code != exitOpen {
		t.Fatalf("host b: exit %d, want 75 (skipped on the circuit host a tripped):\n%s", p.code, p.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("host b ran the command on an open circuit")
	}
	if st := b.status(t, "zigbee"); st["state"] != "open" || st["skipped"] != float64(1) || st["total_failures"] != float64(1) {
		t.Errorf("status on host b: %v; want open, 1 failure (a's) and 1 skip (b's)", st)
	}
	a.neverFellBack(t)
	b.neverFellBack(t)
}

func TestRedisExactlyOneOfTwentyCallersOverTwoHostsProbes(t *testing.T) {
	srv := redistest.Start(t)
	// 20 processes starting at once on 2 shared cores can wait longer than
	// the default 50 ms for the CPU, and a run whose Redis budget is spent
	// falls back to its host's local dir, where the circuit is closed. That
	// is the fallback working; this test checks the probe lease, so it
	// widens the budget in the URL.
	hosts := []host{newHost(t, srv), newHost(t, srv)}
	policy := []string{"--attempts", "1", "--open-for", "300ms", "--trip-after", "1", "--timeout", "2m"}
	if p := hosts[0].fb(t, runArgs("bridge", policy, "false")...); p.code != 1 {
		t.Fatalf("tripping run: exit %d:\n%s", p.code, p.stderr)
	}
	waitFor(t, "the open period to end", func() bool { return hosts[1].status(t, "bridge")["state"] == "half_open" })

	probeRace(t, 20, func(i int, command string) int {
		p := hosts[i%2].fb(t, runArgs("bridge", policy, "sh", "-c", command)...)
		if strings.Contains(p.stderr, "unreachable") {
			t.Errorf("caller %d fell back to its local dir:\n%s", i, p.stderr)
		}
		return p.code
	})
	if st := hosts[0].status(t, "bridge"); st["state"] != "closed" {
		t.Errorf("after the probe succeeded: %v, want closed", st["state"])
	}
	hosts[0].neverFellBack(t)
	hosts[1].neverFellBack(t)
}

// Every process blocks on one pipe until all have started, so that they all
// record their outcome at once: half succeed, half fail, over two hosts.
func TestRedisTwoHundredProcessesOverTwoHostsLoseNoCount(t *testing.T) {
	srv := redistest.Start(t)
	// 200 processes starting at once on 2 shared cores wait far longer than
	// the default 50 ms budget for the CPU: what this test checks is that no
	// count is lost, so it widens the budget the way a user of a busy host
	// would, in the URL.
	hosts := []host{newHost(t, srv), newHost(t, srv)}
	n := 200
	if testing.Short() {
		n = 40
	}
	ready := t.TempDir()
	barrier, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer barrier.Close()
	defer release.Close()
	policy := []string{"--attempts", "1", "--trip-after", "100000"}
	cmds := make([]*exec.Cmd, n)
	stderr := make([]bytes.Buffer, n)
	for i := range cmds {
		code := fmt.Sprint(3 * (i % 2))
		cmd := hosts[i%2].cmd(runArgs("shared", policy, "sh", "-c", `touch "$1"; cat; exit $2`, "sh", filepath.Join(ready, fmt.Sprint(i)), code)...)
		cmd.Stdin, cmd.Stderr = barrier, &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	waitFor(t, "every command to start", func() bool {
		entries, _ := os.ReadDir(ready)
		return len(entries) == n
	})
	release.Close()
	for i, cmd := range cmds {
		err := cmd.Wait()
		want := 3 * (i % 2)
		if got := cmd.ProcessState.ExitCode(); got != want {
			t.Errorf("process %d: exit %d (%v), want %d:\n%s", i, got, err, want, stderr[i].String())
		}
		if strings.Contains(stderr[i].String(), "unreachable") {
			t.Errorf("process %d fell back: %s", i, stderr[i].String())
		}
	}
	st := hosts[0].status(t, "shared")
	if st["total_successes"] != float64(n/2) || st["total_failures"] != float64(n/2) || st["consecutive_failures"] == nil {
		t.Errorf("status after %d processes: %v; want %d successes and %d failures", n, st, n/2, n/2)
	}
}

func TestRedisDownTheCallRunsWithOneWarningAndNoPassword(t *testing.T) {
	dead := "redis://fusebox:hunter2@127.0.0.1:1/0" // nothing listens on port 1
	h := newHostAt(t, dead)
	p := h.fb(t, runArgs("api", fastPolicy, "true")...)
	if p.code != 0 {
		t.Fatalf("exit %d with Redis down, want the command's 0:\n%s", p.code, p.stderr)
	}
	if n := countLines(p.stderr, "unreachable"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, p.stderr)
	}
	if strings.Contains(p.stderr, "hunter2") {
		t.Errorf("the password shows:\n%s", p.stderr)
	}
	if st := statusOfEnv(t, h.local, nil, "api"); st["total_successes"] != float64(1) {
		t.Errorf("local fallback status %v, want the success counted there", st)
	}
	// --state too, and the same for status, which reads the local store.
	p = h.fb(t, "--state", dead, "status")
	if p.code != 0 || strings.Contains(p.stdout+p.stderr, "hunter2") {
		t.Errorf("status with Redis down: exit %d, output:\n%s%s", p.code, p.stdout, p.stderr)
	}
}

func TestRedisStateInTheConfigIsShownWithoutItsPassword(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("state: redis://fusebox:${file:"+filepath.Join(dir, "pw")+"}@127.0.0.1:1/0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"FUSEBOX_CONFIG=" + cfg, "FUSEBOX_STATE_DIR=", "STATE_DIRECTORY=" + filepath.Join(dir, "local")}
	p := inprocEnv(t, filepath.Join(dir, "state"), env, "validate")
	if p.code != 0 || !strings.Contains(p.stdout, "redis://fusebox:xxxxx@127.0.0.1:1/0") || strings.Contains(p.stdout+p.stderr, "hunter2") {
		t.Errorf("validate: exit %d:\n%s%s\nwant the URL with its password hidden", p.code, p.stdout, p.stderr)
	}
	p = fbEnv(t, filepath.Join(dir, "state"), env, runArgs("api", fastPolicy, "true")...)
	if p.code != 0 || countLines(p.stderr, "unreachable") != 1 || strings.Contains(p.stderr, "hunter2") {
		t.Errorf("run: exit %d:\n%s\nwant the call run with one warning and no password", p.code, p.stderr)
	}
}

func TestRedisKilledBetweenRunsAndBackEmpty(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv)
	if p := h.fb(t, "trip", "--new", "nas"); p.code != 0 || strings.Contains(p.stderr, "unreachable") {
		t.Fatalf("trip: exit %d:\n%s", p.code, p.stderr)
	}
	srv.Kill()
	if p := h.fb(t, runArgs("nas", fastPolicy, "true")...); p.code != 0 || countLines(p.stderr, "unreachable") != 1 {
		t.Errorf("with Redis killed: exit %d:\n%s\nwant the call run with one warning", p.code, p.stderr)
	}
	srv.Restart()
	if p := h.fb(t, runArgs("nas", fastPolicy, "true")...); p.code != 0 || p.stderr != "" {
		t.Errorf("on Redis restarted empty: exit %d:\n%s\nwant the call run quietly (the trip was lost with Redis)", p.code, p.stderr)
	}
	if st := h.status(t, "nas"); st["state"] != "closed" || st["total_successes"] != float64(1) {
		t.Errorf("status on Redis restarted empty: %v; want closed with the 1 success since", st)
	}
}

// A generous bound: the budget is 150 ms a command and the fast path hands
// its failure on, so a run waits on Redis about once; one that waited for a
// paused Redis would take the whole pause.
func TestRedisPausedTheRunWaitsOnlyItsBudget(t *testing.T) {
	srv := redistest.Start(t)
	h := newHostAt(t, srv.URL()) // the default budget
	if got := srv.Do("CLIENT", "PAUSE", "5000", "ALL"); got != "+OK" {
		t.Fatalf("CLIENT PAUSE = %s", got)
	}
	p := h.fb(t, runArgs("api", fastPolicy, "true")...)
	if p.code != 0 || countLines(p.stderr, "unreachable") != 1 {
		t.Errorf("exit %d:\n%s\nwant the call run with one warning", p.code, p.stderr)
	}
	if p.took > 2500*time.Millisecond {
		t.Errorf("the run took %s on a Redis paused for 5s; want it to give up within its budget", p.took)
	}
}

// Six scripts over two hosts ask for the weather together: the first holds
// the answer's lock in Redis while it calls, the others wait for it and
// share its fresh answer, so the API sees one call. A third host, which never
// called, is served that fresh answer from Redis; once the API is down, the
// stale one.
func TestRedisSixScriptsOverTwoHostsCostOneUpstreamCallAndShareTheirAnswer(t *testing.T) {
	srv := redistest.Start(t)
	var hits atomic.Int32
	var down atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		time.Sleep(200 * time.Millisecond) // a slow weather API: the others arrive meanwhile
		fmt.Fprintln(w, `{"main":{"temp":21.5}}`)
	}))
	defer api.Close()
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`circuits:
  owm:
    attempts: 1
    http:
      url: %s/weather
      extract: .main.temp
chains:
  weather:
    endpoints: [owm]
    fresh: 10m
    stale: 1h
`, api.URL)), 0o600)
	hosts := []host{newHost(t, srv), newHost(t, srv), newHost(t, srv)}
	for i := range hosts {
		hosts[i].env = append(hosts[i].env, "FUSEBOX_CONFIG="+cfg)
	}
	var wg sync.WaitGroup
	outs := make([]proc, 6)
	for i := range outs {
		wg.Go(func() { outs[i] = hosts[i%2].fb(t, "call", "weather") })
	}
	wg.Wait()
	for i, p := range outs {
		if p.code != 0 || p.stdout != "21.5\n" {
			t.Errorf("script %d: exit %d, %q\n%s", i, p.code, p.stdout, p.stderr)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("six scripts over two hosts made %d upstream calls, want 1", n)
	}
	third := hosts[2]
	if p := third.fb(t, "call", "--json", "weather"); p.code != 0 || !strings.Contains(p.stdout, `"source":"fresh"`) || hits.Load() != 1 {
		t.Errorf("third host: exit %d, %s\n%s; want the fresh answer from Redis, no upstream call", p.code, p.stdout, p.stderr)
	}
	down.Store(true)
	if p := third.fb(t, "call", "--no-fresh", "--json", "weather"); p.code != 0 || !strings.Contains(p.stdout, `"source":"stale"`) || !strings.Contains(p.stdout, "21.5") {
		t.Errorf("third host, API down: exit %d, %s\n%s; want the stale answer from Redis", p.code, p.stdout, p.stderr)
	}
	for _, h := range hosts {
		h.neverFellBack(t)
	}
}

// The fast path's connection is the full command's too: a healthy run dials
// Redis once.
func TestRedisAHealthyRunConnectsOnce(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv)
	before, _ := strconv.Atoi(srv.Info("total_connections_received"))
	if p := h.fb(t, runArgs("api", fastPolicy, "true")...); p.code != 0 || p.stderr != "" {
		t.Fatalf("exit %d:\n%s", p.code, p.stderr)
	}
	after, _ := strconv.Atoi(srv.Info("total_connections_received"))
	// One for the run, one for the INFO above it.
	if got := after - before - 1; got != 1 {
		t.Errorf("a healthy run made %d connections to Redis, want 1", got)
	}
	if st := h.status(t, "api"); st["total_successes"] != float64(1) {
		t.Errorf("status %v, want the success counted", st)
	}
}
