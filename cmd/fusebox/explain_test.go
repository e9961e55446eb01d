package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	cfgexplain "github.com/fusebox-hq/fusebox/config/explain"
	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestExplainSaysWhyARunWouldSkip(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, `defaults:
  attempts: 2
circuits:
  bridge:
    trip_after: 2
    open_for: 3m
    skip_exit: 99
  api:
    http: {url: "http://127.0.0.1:1/x", timeout: 2s}
chains:
  weather: {endpoints: [api], stale: 1h}
`)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	explain := func(args ...string) testenv.Proc {
		t.Helper()
		p := inprocEnv(t, state, env, append([]string{"explain"}, args...)...)
		if p.Code != 0 {
			t.Fatalf("explain %v: exit %d: %s", args, p.Code, p.Stderr)
		}
		if p.Stderr != "" {
			t.Errorf("explain %v printed on stderr: %s", args, p.Stderr)
		}
		return p
	}
	if p := explain("bridge"); !strings.Contains(p.Stdout, "bridge (circuit): would run: closed") {
		t.Errorf("a new circuit:\n%s", p.Stdout)
	}
	inprocEnv(t, state, env, "run", "--backoff", "1ms", "bridge", "--", "sh", "-c", "echo bridge offline >&2; exit 3")

	p := explain("bridge")
	for _, want := range []string{
		"bridge (circuit): would skip until ",
		"by 2 consecutive failures, last: exit status 3: bridge offline",
		"a run would exit 99 without running its command",
		"attempts         2     config " + cfg + ":2 (defaults.attempts)",
		"trip_after       2     config " + cfg + ":5 (circuits.bridge.trip_after)",
		"open_for         3m0s  config " + cfg + ":6 (circuits.bridge.open_for)",
		"backoff          2s    default",
		"skip_exit        99    config " + cfg + ":7 (circuits.bridge.skip_exit)",
	} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("explain of an open circuit lacks %q:\n%s", want, p.Stdout)
		}
	}
	for _, want := range []string{
		`(?m)^state +` + regexp.QuoteMeta(state) + ` +env \$FUSEBOX_STATE_DIR$`,
		`(?m)^config +` + regexp.QuoteMeta(cfg) + ` +env \$FUSEBOX_CONFIG$`,
	} {
		if !regexp.MustCompile(want).MatchString(p.Stdout) {
			t.Errorf("explain of an open circuit lacks %s:\n%s", want, p.Stdout)
		}
	}

	// Flags as the run would take them; --json for scripts.
	p = explain("bridge", "--attempts", "5", "--skip-exit", "70", "--json")
	var e cfgexplain.Explanation
	if err := json.Unmarshal([]byte(p.Stdout), &e); err != nil {
		t.Fatalf("--json: %v\n%s", err, p.Stdout)
	}
	if e.Action != "skip" || e.Phase != "open" || e.Until == nil || *e.SkipExit != 70 || !strings.Contains(e.Why, "bridge offline") {
		t.Errorf("--json: %+v", e)
	}
	got := map[string]cfgexplain.PolicyValue{}
	for _, v := range e.Policy {
		got[v.Key] = v
	}
	if v := got["attempts"]; v.Value != "5" || v.Source != "flag" || v.Flag != "--attempts" {
		t.Errorf("attempts from a flag: %+v", v)
	}
	if v := got["open_for"]; v.Source != "config" || v.Line != 6 || v.ConfigKey != "circuits.bridge.open_for" || v.File != cfg {
		t.Errorf("open_for from the config: %+v", v)
	}

	// A chain: each endpoint, in order, with its own policy.
	p = explain("weather")
	for _, want := range []string{
		"weather (chain): tries api in order",
		"api (endpoint): would run: closed",
		"timeout          2s    config " + cfg + ":9 (circuits.api.http.timeout)",
		"probe_lease      4s    default (timeout + 2s)",
	} {
		if !strings.Contains(p.Stdout, want) {
			t.Errorf("explain of a chain lacks %q:\n%s", want, p.Stdout)
		}
	}
	// ...and the chain's own deadline, hedge, fresh and stale.
	for _, want := range []string{
		`(?m)^policy of weather$`,
		`(?m)^  deadline +1m0s \(the sum of its endpoints' deadlines\) +default$`,
		`(?m)^  hedge +none: one endpoint at a time +default$`,
		`(?m)^  fresh +none: every call asks +default$`,
		`(?m)^  stale +1h0m0s +config ` + regexp.QuoteMeta(cfg) + `:11 \(chains\.weather\.stale\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(p.Stdout) {
			t.Errorf("explain of a chain lacks its own %s:\n%s", want, p.Stdout)
		}
	}

	// Maintenance, and a typo.
	inprocEnv(t, state, env, "trip", "api", "--for", "10m")
	if p := explain("api"); !strings.Contains(p.Stdout, "would skip until ") || !strings.Contains(p.Stdout, "tripped for maintenance") {
		t.Errorf("a tripped endpoint:\n%s", p.Stdout)
	}
	if p := inprocEnv(t, state, env, "explain", "bridg"); p.Code != exitUsage || !strings.Contains(p.Stderr, "did you mean bridge?") {
		t.Errorf("a typo: exit %d, %s", p.Code, p.Stderr)
	}
}

// Once its open period is over, the next run would be the probe.
func TestExplainSaysWhenARunWouldProbe(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	inproc(t, state, "run", "--attempts", "1", "--trip-after", "1", "--open-for", "1ms", "nas", "--", "false")
	testenv.WaitFor(t, "the open period to end", func() bool {
		p := inproc(t, state, "explain", "nas")
		return strings.Contains(p.Stdout, "nas (circuit): would probe: half-open: the open period ended at ")
	})
}

// Under open_for: auto, explain shows the learned period and what it was
// learned from.
func TestExplainShowsALearnedOpenPeriod(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, "circuits:\n  bridge:\n    attempts: 1\n    trip_after: 1\n    open_for: auto\n")
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	p := inprocEnv(t, state, env, "explain", "bridge")
	if !strings.Contains(p.Stdout, "open_for         auto: 30s  config "+cfg+":5 (circuits.bridge.open_for); no outage recorded yet") {
		t.Errorf("before any outage:\n%s%s", p.Stdout, p.Stderr)
	}
	// An outage that ends at its first probe: the next is learned from it.
	inprocEnv(t, state, env, "run", "bridge", "--open-for", "1ms", "--", "false")
	testenv.WaitFor(t, "the open period to end", func() bool {
		return strings.Contains(inprocEnv(t, state, env, "explain", "bridge").Stdout, "would probe")
	})
	if p := inprocEnv(t, state, env, "run", "bridge", "--", "true"); p.Code != 0 {
		t.Fatalf("the probe: exit %d %s", p.Code, p.Stderr)
	}
	p = inprocEnv(t, state, env, "explain", "bridge", "--json")
	var e cfgexplain.Explanation
	if err := json.Unmarshal([]byte(p.Stdout), &e); err != nil {
		t.Fatal(err)
	}
	for _, v := range e.Policy {
		if v.Key == "open_for" && (!strings.HasPrefix(v.Value, "auto: ") || !strings.Contains(v.Learned, "learned from the last 1 outage(s): back by")) {
			t.Errorf("open_for after one outage: %+v", v)
		}
	}
}

func TestExplainSaysACircuitIsWatchedOverMQTT(t *testing.T) {
	base := t.TempDir()
	cfg := writeConfigPath(t, base, `mqtt: {broker: 'tcp://127.0.0.1:1883'}
circuits:
  zigbee:
    health:
      mqtt: {topic: zigbee2mqtt/bridge/state, up: '.state == "online"'}
`)
	p := inprocEnv(t, filepath.Join(base, "state"), []string{"FUSEBOX_CONFIG=" + cfg}, "explain", "zigbee")
	want := `watched over MQTT by fusebox serve: zigbee2mqtt/bridge/state, up when .state == "online" (config ` + cfg + `:5)`
	if p.Code != 0 || !strings.Contains(p.Stdout, want) {
		t.Errorf("explain of a watched circuit: exit %d, lacks %q:\n%s%s", p.Code, want, p.Stdout, p.Stderr)
	}
}

func TestExplainShowsARetryBudgetAndWhereItIsSet(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, `defaults:
  retry_budget: 20%
circuits:
  api: {retry_budget: {percent: 10%, window: 30s}}
  plain: {retry_budget: null}
  inherits: {}
`)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	explain := func(args ...string) string {
		t.Helper()
		p := inprocEnv(t, state, env, append([]string{"explain"}, args...)...)
		if p.Code != 0 {
			t.Fatalf("explain %v: exit %d: %s", args, p.Code, p.Stderr)
		}
		return regexp.MustCompile(` +`).ReplaceAllString(p.Stdout, " ")
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"api"}, []string{
			"retry_budget.percent 10% config " + cfg + ":4 (circuits.api.retry_budget.percent)",
			"retry_budget.min 3 default",
			"retry_budget.window 30s config " + cfg + ":4 (circuits.api.retry_budget.window)",
		}},
		{[]string{"inherits"}, []string{"retry_budget.percent 20% config " + cfg + ":2 (defaults.retry_budget)", "retry_budget.window 10s default"}},
		{[]string{"api", "--retry-budget", "50%"}, []string{"retry_budget.percent 50% flag --retry-budget", "retry_budget.window 30s config"}},
	} {
		out := explain(c.args...)
		for _, want := range c.want {
			if !strings.Contains(out, want) {
				t.Errorf("explain %v lacks %q:\n%s", c.args, want, out)
			}
		}
	}
	for _, args := range [][]string{{"plain"}, {"api", "--retry-budget", "off"}} {
		if out := explain(args...); strings.Contains(out, "retry_budget") {
			t.Errorf("explain %v of a circuit without a budget shows one:\n%s", args, out)
		}
	}
	p := inprocEnv(t, state, env, "run", "api", "--retry-budget", "-5%", "--", "true")
	if p.Code != 64 || !strings.Contains(p.Stderr, "--retry-budget") {
		t.Errorf("run --retry-budget -5%%: exit %d, want 64 naming the flag: %s", p.Code, p.Stderr)
	}
}

// explain promises to change nothing: a damaged state file is reported, not
// moved aside (it was, and explain then found no such circuit and exited
// 64), and the explanation is what a run would do: move it aside and run.
func TestExplainChangesNothingOnADamagedStateFile(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(state, "nas.json")
	if err := os.WriteFile(path, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := tree(state)
	p := inproc(t, state, "explain", "nas")
	if p.Code != 0 || !strings.Contains(p.Stdout, "would run: "+path+" is damaged") || !strings.Contains(p.Stdout, "a run moves it aside") {
		t.Errorf("explain: exit %d\n%s%s\nwant 0 and the damage reported", p.Code, p.Stdout, p.Stderr)
	}
	if after := tree(state); !slices.Equal(before, after) {
		t.Errorf("explain changed the state dir: %v, then %v", before, after)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{garbage" {
		t.Errorf("the damaged file after explain: %q, %v; want it untouched", b, err)
	}
}

// tree lists the paths under dir, dir first.
func tree(dir string) []string {
	var paths []string
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	})
	return paths
}

// On Redis too explain writes nothing: a damaged state key is reported and
// left in place, not moved aside, and Redis counts no write.
func TestExplainChangesNothingOnADamagedRedisKey(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do("HSET", "fusebox:s:nas", "v", "3", "state", "{garbage")
	srv.Do("ZADD", "fusebox:names", "1", "nas")
	writes := srv.Info("rdb_changes_since_last_save")
	h := newHost(t, srv)
	p := inprocEnv(t, h.local, h.env, "explain", "nas")
	if p.Code != 0 || !strings.Contains(p.Stdout, "would run: redis key fusebox:s:nas is damaged") || !strings.Contains(p.Stdout, "a run moves it aside") {
		t.Errorf("explain: exit %d\n%s%s\nwant 0 and the damage reported", p.Code, p.Stdout, p.Stderr)
	}
	if typ, aside := srv.Do("TYPE", "fusebox:s:nas"), srv.Do("EXISTS", "fusebox:damaged:s:nas"); typ != "+hash" || aside != ":0" {
		t.Errorf("after explain the key is a %s and %s moved aside; want it in place", typ, aside)
	}
	if got := srv.Info("rdb_changes_since_last_save"); got != writes {
		t.Errorf("Redis counts writes %s before explain and %s after, want none", writes, got)
	}
}

// Checking that the name is known reads the circuit's counters and the
// list of names too: damaged ones are reported by a run's move aside, not
// made, and Redis counts no write and holds the same keys.
func TestExplainChangesNothingOnDamagedRedisCountsAndNames(t *testing.T) {
	srv := redistest.Start(t)
	srv.Do("HSET", "fusebox:c:nas", "successes", strings.Repeat("9", 30))
	srv.Do("SET", "fusebox:names", "hand-written")
	writes, keys := srv.Info("rdb_changes_since_last_save"), srv.Info("db0")
	h := newHost(t, srv)
	p := inprocEnv(t, h.local, h.env, "explain", "nas")
	if p.Code != 0 || !strings.Contains(p.Stdout, "would run: redis key fusebox:c:nas is damaged") {
		t.Errorf("explain: exit %d\n%s%s\nwant 0 and the damaged counters reported", p.Code, p.Stdout, p.Stderr)
	}
	if c, n := srv.Do("HSTRLEN", "fusebox:c:nas", "successes"), srv.Do("TYPE", "fusebox:names"); c != ":30" || n != "+string" {
		t.Errorf("after explain the counter holds %s bytes and the names are a %s; want both in place", c, n)
	}
	for _, k := range []string{"fusebox:damaged:c:nas", "fusebox:damaged:names"} {
		if got := srv.Do("EXISTS", k); got != ":0" {
			t.Errorf("after explain %s exists: %s, want nothing moved aside", k, got)
		}
	}
	if got := srv.Info("rdb_changes_since_last_save"); got != writes {
		t.Errorf("Redis counts writes %s before explain and %s after, want none", writes, got)
	}
	if got := srv.Info("db0"); got != keys {
		t.Errorf("Redis holds %s before explain and %s after, want the same", keys, got)
	}
}

// With Redis down explain reads the host's replica as far as there is one
// and creates nothing: no replica, no availability circuit, no state dir
// entry, whether the host has used Redis before or not.
func TestExplainWithRedisDownCreatesNothing(t *testing.T) {
	srv := redistest.Start(t)
	fresh, used := newHost(t, srv), newHost(t, srv)
	if p := inprocEnv(t, used.local, used.env, "trip", "--new", "nas"); p.Code != 0 {
		t.Fatalf("trip: exit %d\n%s", p.Code, p.Stderr)
	}
	srv.Kill()
	for _, c := range []struct {
		host host
		code int
		out  string
	}{
		{fresh, 64, ""}, // no replica: nas is known nowhere
		{used, 0, "would skip"},
	} {
		if err := os.MkdirAll(c.host.local, 0o700); err != nil {
			t.Fatal(err)
		}
		before := tree(c.host.local)
		p := inprocEnv(t, c.host.local, c.host.env, "explain", "nas")
		if p.Code != c.code || !strings.Contains(p.Stdout, c.out) {
			t.Errorf("explain with Redis down: exit %d\n%s%s\nwant %d and %q", p.Code, p.Stdout, p.Stderr, c.code, c.out)
		}
		if after := tree(c.host.local); !slices.Equal(before, after) {
			t.Errorf("explain with Redis down changed the state dir: %v, then %v", before, after)
		}
	}
}

// The commands that only read say of a state dir not made yet what they
// say of an empty one, and make nothing; the first run makes it, 0700.
func TestReadingCommandsLeaveAMissingStateDirMissing(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	cfg := writeConfigPath(t, base, "circuits:\n  nas: {trip_after: 2}\n")
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	commands := [][]string{{"explain", "nas"}, {"explain", "--json", "nas"}, {"status"}, {"status", "--json"}, {"status", "--format", "prometheus"}, {"history"}, {"history", "--json"}}
	missing := make([]testenv.Proc, len(commands))
	for i, args := range commands {
		missing[i] = inprocEnv(t, state, env, args...)
		if _, err := os.Lstat(state); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v made the state dir (%v)", args, err)
		}
	}
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, args := range commands {
		empty := inprocEnv(t, state, env, args...)
		if m := missing[i]; m.Code != empty.Code || m.Stdout != empty.Stdout || m.Stderr != empty.Stderr {
			t.Errorf("%v without the state dir: exit %d\n%s%s\nwith it empty: exit %d\n%s%s", args, m.Code, m.Stdout, m.Stderr, empty.Code, empty.Stdout, empty.Stderr)
		}
	}
	if err := os.Remove(state); err != nil {
		t.Fatal(err)
	}
	if p := inprocEnv(t, state, env, "run", "nas", "--", "true"); p.Code != 0 {
		t.Fatalf("run: exit %d: %s", p.Code, p.Stderr)
	}
	if fi, err := os.Stat(state); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Fatalf("after a run the state dir is %v, %v; want a dir, 0700", fi, err)
	}
}
