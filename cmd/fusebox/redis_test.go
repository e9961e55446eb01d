package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/redis"
	"github.com/fusebox-hq/fusebox/statestore"
)

// host is one machine sharing circuits through Redis: a local state dir of
// its own (its fallback), under a HOME of its own.
type host struct {
	state string // FUSEBOX_STATE_DIR: the redis:// URL
	local string // the local state dir, of the replica: $STATE_DIRECTORY
	env   []string
}

// newHost is a host on srv at the default bound, which a busy machine
// must not miss: slow is not down.
func newHost(t *testing.T, srv *redistest.Server) host { return newHostAt(t, srv.URL()) }

// newHostAt is a host with state at url. Its local dir is given as
// $STATE_DIRECTORY: the tests may run as root, whose default is /var/lib.
func newHostAt(t testing.TB, url string) host {
	home := t.TempDir()
	local := filepath.Join(home, "local-state")
	return host{state: url, local: local, env: []string{"HOME=" + home, "STATE_DIRECTORY=" + local, "FUSEBOX_STATE_DIR=" + url}}
}

// fb runs the fusebox binary on h.
func (h host) fb(t *testing.T, args ...string) testenv.Proc {
	t.Helper()
	return fbEnv(t, filepath.Join(filepath.Dir(h.local), "unused"), h.env, args...)
}

func (h host) cmd(args ...string) *exec.Cmd {
	return fbCmd(filepath.Join(filepath.Dir(h.local), "unused"), h.env, args...)
}

// replica is h's replica of its Redis store (statestore.ReplicaDir).
func (h host) replica() string { return statestore.ReplicaDir(h.local, h.state, "") }

func (h host) status(t *testing.T, name string) map[string]any {
	t.Helper()
	return statusOfEnv(t, h.local, h.env, name)
}

func statusOfEnv(t *testing.T, stateDir string, env []string, name string) map[string]any {
	t.Helper()
	p := inprocEnv(t, stateDir, env, "status", "--json", name)
	if p.Code != 0 {
		t.Fatalf("status: exit %d: %s", p.Code, p.Stderr)
	}
	return decodeRow(t, p.Stdout)
}

// neverFellBack checks that no process of h found Redis unavailable: its
// availability circuit, in the local state dir, never recorded a failure.
func (h host) neverFellBack(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(h.replica(), statestore.HealthDir, "events", "primary.jsonl")); err == nil {
		t.Errorf("host %s found Redis unavailable and used its local replica:\n%s", h.local, b)
	}
}

// availability is the state of h's availability circuit of Redis.
func (h host) availability(t *testing.T) string {
	t.Helper()
	st, _ := statusOfEnv(t, filepath.Join(h.replica(), statestore.HealthDir), nil, "primary")["state"].(string)
	return st
}

func TestRedisAFailureOnOneHostTripsTheCircuitForTheOther(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newHost(t, srv), newHost(t, srv)
	policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "10m"}
	if p := a.fb(t, testenv.RunArgs("zigbee", policy, "false")...); p.Code != 1 {
		t.Fatalf("host a: exit %d, want the command's 1:\n%s", p.Code, p.Stderr)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	p := b.fb(t, testenv.RunArgs("zigbee", policy, "touch", ran)...)
	if p.Code != exitOpen {
		t.Fatalf("host b: exit %d, want 75 (skipped on the circuit host a tripped):\n%s", p.Code, p.Stderr)
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
	hosts := []host{newHost(t, srv), newHost(t, srv)}
	policy := []string{"--attempts", "1", "--open-for", "300ms", "--trip-after", "1", "--timeout", "2m", "--deadline", "2m"}
	if p := hosts[0].fb(t, testenv.RunArgs("bridge", policy, "false")...); p.Code != 1 {
		t.Fatalf("tripping run: exit %d:\n%s", p.Code, p.Stderr)
	}
	testenv.WaitFor(t, "the open period to end", func() bool { return hosts[1].status(t, "bridge")["state"] == "half_open" })

	probeRace(t, 20, func(i int, command string) int {
		p := hosts[i%2].fb(t, testenv.RunArgs("bridge", policy, "sh", "-c", command)...)
		if strings.Contains(p.Stderr, "unreachable") {
			t.Errorf("caller %d fell back to its local dir:\n%s", i, p.Stderr)
		}
		return p.Code
	})
	if st := hosts[0].status(t, "bridge"); st["state"] != "closed" {
		t.Errorf("after the probe succeeded: %v, want closed", st["state"])
	}
	hosts[0].neverFellBack(t)
	hosts[1].neverFellBack(t)
}

// Every process blocks on one pipe until all have started, so that they all
// record their outcome at once: half succeed, half fail, over two hosts.
// Starting 200 processes on a busy 2-core machine takes many seconds, which
// the first ones spend waiting on the pipe: their --timeout is long, so that
// a slow start is not taken for a failure (and so is their --deadline).
func TestRedisTwoHundredProcessesOverTwoHostsLoseNoCount(t *testing.T) {
	testenv.Heavy(t) // 200 processes
	t.Parallel()
	srv := redistest.Start(t)
	n := 200
	if testing.Short() {
		n = 40
	}
	got := twoHundred(t, []host{newHostAt(t, srv.URL()), newHostAt(t, srv.URL())}, "shared", n)
	if got.timedOut > 0 || got.fellBack > 0 || got.lost != 0 {
		t.Errorf("%d processes over two hosts at the default bound: %d timed out before all had started, %d recorded their outcome on their host's replica instead of Redis (%d warned), %d outcomes lost",
			n, got.timedOut, got.fellBack, got.warned, got.lost)
	}
}

// contention is what twoHundred saw.
type contention struct {
	wall            time.Duration
	timedOut, wrong int // processes that hit --timeout, or exited otherwise wrong
	warned          int // processes that warned that Redis was unreachable
	fellBack        int // outcomes recorded on a host's replica instead of Redis
	lost            int // outcomes neither in the store nor on a replica
}

// twoHundred runs n processes of circuit name over hosts, released together
// once all have started, half failing (exit 3) and half succeeding, and
// reads the counts back with fusebox status on the first host.
func twoHundred(t testing.TB, hosts []host, name string, n int) contention {
	ready := t.TempDir()
	barrier, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer barrier.Close()
	defer release.Close()
	policy := []string{"--attempts", "1", "--trip-after", "100000", "--timeout", "10m", "--deadline", "10m"}
	cmds := make([]*exec.Cmd, n)
	stderr := make([]bytes.Buffer, n)
	for i := range cmds {
		code := fmt.Sprint(3 * (i % 2))
		cmd := hosts[i%len(hosts)].cmd(testenv.RunArgs(name, policy, "sh", "-c", `touch "$1"; cat; exit $2`, "sh", filepath.Join(ready, fmt.Sprint(i)), code)...)
		cmd.Stdin, cmd.Stderr = barrier, &stderr[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	deadline := time.Now().Add(10 * time.Minute)
	for {
		entries, _ := os.ReadDir(ready)
		if len(entries) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d processes started their command in 10 minutes", len(entries), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	release.Close()
	var c contention
	for i, cmd := range cmds {
		cmd.Wait()
		switch code := cmd.ProcessState.ExitCode(); {
		case code == 124:
			if c.timedOut++; c.timedOut <= 3 {
				t.Logf("process %d timed out:\n%s", i, stderr[i].String())
			}
		case code != 3*(i%2):
			c.wrong++
			t.Errorf("process %d: exit %d, want %d:\n%s", i, code, 3*(i%2), stderr[i].String())
		}
		if strings.Contains(stderr[i].String(), "unreachable") {
			if c.warned++; c.warned <= 3 {
				t.Logf("process %d warned:\n%s", i, stderr[i].String())
			}
		}
	}
	c.wall = time.Since(start)
	// Read by a new host, whose availability circuit is closed: the store
	// itself, not a replica standing in for it.
	got := outcomes(t, newHostAt(t, hosts[0].state), name)
	for _, h := range hosts {
		if !redis.IsURL(h.state) {
			continue
		}
		replica, err := file.Open(h.replica())
		if err != nil {
			t.Fatal(err)
		}
		rc, err := replica.Counts(context.Background(), name)
		replica.Close()
		if err != nil {
			t.Fatal(err)
		}
		c.fellBack += int(rc.Successes + rc.Failures)
	}
	c.lost = n - got - c.fellBack
	return c
}

// outcomes is the successes and failures of circuit name that fusebox
// status shows on h.
func outcomes(t testing.TB, h host, name string) int {
	out, err := h.cmd("status", "--json", name).Output()
	var rows []struct {
		Successes int `json:"total_successes"`
		Failures  int `json:"total_failures"`
	}
	if err != nil || json.Unmarshal(out, &rows) != nil || len(rows) != 1 {
		t.Fatalf("status of %s on %s: %v: %s", name, h.state, err, out)
	}
	return rows[0].Successes + rows[0].Failures
}

func TestRedisDownTheCallRunsWithOneWarningAndNoPassword(t *testing.T) {
	dead := "redis://fusebox:hunter2@127.0.0.1:1/0" // nothing listens on port 1
	h := newHostAt(t, dead)
	p := h.fb(t, testenv.RunArgs("api", fastPolicy, "true")...)
	if p.Code != 0 {
		t.Fatalf("exit %d with Redis down, want the command's 0:\n%s", p.Code, p.Stderr)
	}
	if n := countLines(p.Stderr, "unreachable"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, p.Stderr)
	}
	if strings.Contains(p.Stderr, "hunter2") {
		t.Errorf("the password shows:\n%s", p.Stderr)
	}
	if st := statusOfEnv(t, h.replica(), nil, "api"); st["total_successes"] != float64(1) {
		t.Errorf("local fallback status %v, want the success counted there", st)
	}
	// --state too, and the same for status, which reads the local store.
	p = h.fb(t, "--state", dead, "status")
	if p.Code != 0 || strings.Contains(p.Stdout+p.Stderr, "hunter2") {
		t.Errorf("status with Redis down: exit %d, output:\n%s%s", p.Code, p.Stdout, p.Stderr)
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
	if p.Code != 0 || !strings.Contains(p.Stdout, "redis://fusebox:xxxxx@127.0.0.1:1/0") || strings.Contains(p.Stdout+p.Stderr, "hunter2") {
		t.Errorf("validate: exit %d:\n%s%s\nwant the URL with its password hidden", p.Code, p.Stdout, p.Stderr)
	}
	p = fbEnv(t, filepath.Join(dir, "state"), env, testenv.RunArgs("api", fastPolicy, "true")...)
	if p.Code != 0 || countLines(p.Stderr, "unreachable") != 1 || strings.Contains(p.Stderr, "hunter2") {
		t.Errorf("run: exit %d:\n%s\nwant the call run with one warning and no password", p.Code, p.Stderr)
	}
}

// A trip held in Redis stays in force while Redis is down (from the host's
// replica, after one warning). When Redis comes back empty the trip is not
// restored: another host may have reset it before Redis lost it, and a
// reset must never be undone. The run says so in one WARN naming it.
func TestRedisKilledBetweenRunsAndBackEmpty(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	srv := redistest.Start(t)
	h := newHost(t, srv)
	if p := h.fb(t, "trip", "--new", "nas"); p.Code != 0 || strings.Contains(p.Stderr, "unreachable") {
		t.Fatalf("trip: exit %d:\n%s", p.Code, p.Stderr)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	srv.Kill()
	if p := h.fb(t, testenv.RunArgs("nas", fastPolicy, "touch", ran)...); p.Code != exitOpen || countLines(p.Stderr, "unreachable") != 1 {
		t.Errorf("with Redis killed: exit %d:\n%s\nwant the trip kept (75) with one warning", p.Code, p.Stderr)
	}
	if p := h.fb(t, testenv.RunArgs("nas", fastPolicy, "touch", ran)...); p.Code != exitOpen || p.Stderr != "" {
		t.Errorf("again with Redis killed: exit %d:\n%s\nwant the trip kept (75), quietly: the host warned already", p.Code, p.Stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a circuit tripped until reset ran its command while Redis was down")
	}
	srv.Restart()
	testenv.WaitFor(t, "the availability circuit of Redis to be due for a probe", func() bool { return h.availability(t) == "half_open" })
	p := h.fb(t, testenv.RunArgs("nas", fastPolicy, "touch", ran)...)
	if p.Code != 0 || countLines(p.Stderr, "back") != 1 || countLines(p.Stderr, "lost its data") != 1 ||
		countLines(p.Stderr, "tripped circuits not restored") != 1 || !strings.Contains(p.Stderr, "circuits=nas ") || countLines(p.Stderr, "level=") != 3 {
		t.Errorf("on Redis restarted empty: exit %d:\n%s\nwant the command run (0), with one notice that Redis is back and one WARN each for the lost data and the trip not restored", p.Code, p.Stderr)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Error("the command did not run once Redis came back empty")
	}
	if p := h.fb(t, testenv.RunArgs("nas", fastPolicy, "true")...); p.Code != 0 || p.Stderr != "" {
		t.Errorf("the next run: exit %d:\n%s\nwant 0, quietly: the loss was reported once", p.Code, p.Stderr)
	}
}

// A paused Redis: each run gives up at the bound (2s) instead of waiting
// for the pause to end, the third in a row opens the availability circuit
// with the host's one warning, and the next runs go straight to the replica.
func TestRedisPausedTheRunWaitsOnlyItsBound(t *testing.T) {
	t.Parallel() // waits on processes and timers: it runs beside the others
	const pause = 60 * time.Second
	srv := redistest.Start(t)
	h := newHostAt(t, srv.URL()) // the default bound
	if got := srv.Do("CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "ALL"); got != "+OK" {
		t.Fatalf("CLIENT PAUSE = %s", got)
	}
	warnings := 0
	for i := range 4 {
		p := h.fb(t, testenv.RunArgs("api", fastPolicy, "true")...)
		warnings += countLines(p.Stderr, "unreachable")
		if p.Code != 0 || countLines(p.Stderr, "") != countLines(p.Stderr, "unreachable")+1 {
			t.Errorf("run %d: exit %d:\n%s\nwant the call run, at most the warning logged", i, p.Code, p.Stderr)
		}
		if p.Took > pause/4 {
			t.Errorf("run %d took %s on a Redis paused for %s; want it to give up at its bound", i, p.Took, pause)
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings over four runs on a paused Redis, want 1", warnings)
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
	outs := make([]testenv.Proc, 6)
	for i := range outs {
		wg.Go(func() { outs[i] = hosts[i%2].fb(t, "call", "weather") })
	}
	wg.Wait()
	for i, p := range outs {
		if p.Code != 0 || p.Stdout != "21.5\n" {
			t.Errorf("script %d: exit %d, %q\n%s", i, p.Code, p.Stdout, p.Stderr)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("six scripts over two hosts made %d upstream calls, want 1", n)
	}
	third := hosts[2]
	if p := third.fb(t, "call", "--json", "weather"); p.Code != 0 || !strings.Contains(p.Stdout, `"source":"fresh"`) || hits.Load() != 1 {
		t.Errorf("third host: exit %d, %s\n%s; want the fresh answer from Redis, no upstream call", p.Code, p.Stdout, p.Stderr)
	}
	down.Store(true)
	if p := third.fb(t, "call", "--no-fresh", "--json", "weather"); p.Code != 0 || !strings.Contains(p.Stdout, `"source":"stale"`) || !strings.Contains(p.Stdout, "21.5") {
		t.Errorf("third host, API down: exit %d, %s\n%s; want the stale answer from Redis", p.Code, p.Stdout, p.Stderr)
	}
	for _, h := range hosts {
		h.neverFellBack(t)
	}
}

// A healthy run dials Redis once.
func TestRedisAHealthyRunConnectsOnce(t *testing.T) {
	srv := redistest.Start(t)
	h := newHost(t, srv)
	before, _ := strconv.Atoi(srv.Info("total_connections_received"))
	if p := h.fb(t, testenv.RunArgs("api", fastPolicy, "true")...); p.Code != 0 || p.Stderr != "" {
		t.Fatalf("exit %d:\n%s", p.Code, p.Stderr)
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

// With Redis down, the commands that report on the store say which one they
// used: gc names the local replica it collected, and
// fusebox_state_store_up is 0.
func TestRedisDownGCAndStoreUpSayTheReplicaStandsIn(t *testing.T) {
	h := newHostAt(t, "redis://127.0.0.1:1/0") // nothing listens on port 1
	p := h.fb(t, "gc")
	if p.Code != 0 || !strings.Contains(p.Stdout, "in the local replica "+h.replica()+" (the shared state store is unreachable)") {
		t.Errorf("gc with Redis down: exit %d:\n%s%s\nwant it to say it collected the local replica", p.Code, p.Stdout, p.Stderr)
	}
	p = h.fb(t, "status", "--format", "prometheus")
	if p.Code != 0 || !strings.Contains(p.Stdout, "\nfusebox_state_store_up 0\n") {
		t.Errorf("status --format prometheus with Redis down: exit %d:\n%s%s\nwant fusebox_state_store_up 0", p.Code, p.Stdout, p.Stderr)
	}
	srv := redistest.Start(t)
	up := newHost(t, srv)
	if p := up.fb(t, "status", "--format", "prometheus"); p.Code != 0 || !strings.Contains(p.Stdout, "\nfusebox_state_store_up 1\n") {
		t.Errorf("status --format prometheus with Redis up: exit %d:\n%s%s\nwant fusebox_state_store_up 1", p.Code, p.Stdout, p.Stderr)
	}
	if p := up.fb(t, "gc"); p.Code != 0 || strings.Contains(p.Stdout, "replica") {
		t.Errorf("gc with Redis up: exit %d:\n%s%s\nwant it run on Redis", p.Code, p.Stdout, p.Stderr)
	}
}
