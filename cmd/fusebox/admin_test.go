package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestTripForAndResetSteerEveryRun(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, "trip", "--new", "zigbee2mqtt", "--for", "10m")
	if p.Code != 0 || !strings.Contains(p.Stdout, "forced open; closes in 10m") {
		t.Fatalf("trip: exit %d, %q %q", p.Code, p.Stdout, p.Stderr)
	}
	if p = inproc(t, state, testenv.RunArgs("zigbee2mqtt", nil, "true")...); p.Code != exitOpen {
		t.Fatalf("run on a tripped circuit: exit %d, want 75", p.Code)
	}
	st := statusOf(t, state, "zigbee2mqtt")
	if st["state"] != "forced_open" || st["open_until"] == nil || st["opened_at"] == nil {
		t.Errorf("status after trip --for: %v", st)
	}
	if p = inproc(t, state, "reset", "zigbee2mqtt"); p.Code != 0 || !strings.Contains(p.Stdout, "closed") {
		t.Fatalf("reset: exit %d, %q", p.Code, p.Stdout)
	}
	if p = inproc(t, state, testenv.RunArgs("zigbee2mqtt", nil, "true")...); p.Code != 0 {
		t.Fatalf("run after reset: exit %d", p.Code)
	}
	if p = inproc(t, state, "trip", "--new", "nas"); !strings.Contains(p.Stdout, "until 'fusebox reset nas'") {
		t.Errorf("trip without --for: %q", p.Stdout)
	}
}

func TestStatusJSONHasTheDocumentedFields(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	inproc(t, state, testenv.RunArgs("esp32-garage", fastPolicy, "false")...)
	p := inproc(t, state, "status", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(p.Stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("status --json = %q: %v", p.Stdout, err)
	}
	for _, key := range []string{"name", "state", "consecutive_failures", "opened_at", "open_until",
		"last_failure_at", "last_failure", "total_failures", "total_successes", "skipped"} {
		if _, ok := rows[0][key]; !ok {
			t.Errorf("status --json lacks %q: %v", key, rows[0])
		}
	}
	if _, ok := rows[0]["last_success_at"]; ok {
		t.Errorf("last_success_at present although the circuit never succeeded: %v", rows[0])
	}
	table := inproc(t, state, "status").Stdout
	for _, want := range []string{"NAME", "esp32-garage", "open", "exit status 1"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
}

// A chain whose deadline, shared between its endpoints, leaves the last one
// less than an attempt is a warning on stderr, with exit 0 (issue 34 item
// 3); the configs fusebox ships warn of nothing (the docs' own blocks and
// packaging's config are checked by TestDocsConfigsValidate and
// TestPackagingExampleConfigValidates).
func TestValidateWarnsOfAChainsShareTooShortForItsLastEndpoint(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(`circuits:
  a: {http: {url: "http://127.0.0.1:1/"}}
  b: {http: {url: "http://127.0.0.1:2/"}}
chains:
  weather:
    endpoints: [a, b]
    deadline: 15s
`), 0o600)
	p := inproc(t, state, "validate", "--config", cfg)
	want := "warning: " + cfg + ":7: chains.weather: a deadline of 15s leaves b, the last endpoint, 7.5s when the ones before it hang: less than its 10s timeout (a deadline of 20s gives it one whole attempt)\n"
	if p.Code != 0 || !strings.Contains(p.Stdout, ": ok (2 circuits") || p.Stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, ok, and the warning %q", p.Code, p.Stdout, p.Stderr, want)
	}
	p = fbEnv(t, state, []string{"OWM_API_KEY=example"}, "validate", "--config", "../../examples/weather.yaml")
	if p.Code != 0 || p.Stderr != "" {
		t.Errorf("examples/weather.yaml: exit %d, stderr %q; want 0 and no warning", p.Code, p.Stderr)
	}
}

func TestValidateNamesFileLineAndKeyAndExits78(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("defaults:\n  attempts: 4\ncircuits:\n  zigbee2mqtt:\n    open_for: 3m\n"), 0o600)
	if p := inproc(t, state, "validate", "--config", good); p.Code != 0 || !strings.Contains(p.Stdout, "ok (1 circuits") {
		t.Fatalf("validate good config: exit %d %q %q", p.Code, p.Stdout, p.Stderr)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("defaults:\n  attempts: 4\ncircuits:\n  zigbee2mqtt:\n    open_fro: 3m\n"), 0o600)
	for _, args := range [][]string{{"validate", "--config", bad}, {"call", "--config", bad, "zigbee2mqtt"}} {
		p := inproc(t, state, args...)
		if p.Code != exitConfig || !strings.Contains(p.Stderr, "bad.yaml:5:") || !strings.Contains(p.Stderr, "open_fro") {
			t.Errorf("%v: exit %d, stderr %q; want 78 naming bad.yaml:5 and the key", args, p.Code, p.Stderr)
		}
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("a config error wrote to the state dir")
	}
}

func TestRunWithABrokenConfigRunsTheCommandUnderTheDefaults(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("defaults:\n  atempts: 2\n  backoff: soon\n"), 0o600)
	unreadable := filepath.Join(dir, "missing.yaml")
	for i, cfg := range []string{bad, unreadable} {
		name := fmt.Sprint("c", i)
		for _, tc := range []struct {
			command []string
			code    int
		}{{[]string{"sh", "-c", "echo ran"}, 0}, {[]string{"sh", "-c", "exit 3"}, 3}} {
			// As a process, as cron runs it.
			p := fbEnv(t, state, nil, append([]string{"run", "--config", cfg, "--backoff", "1ms", name, "--"}, tc.command...)...)
			if p.Code != tc.code || countLines(p.Stderr, "config not used") != 1 {
				t.Errorf("%s, %v: exit %d, stderr %q; want %d and one line about the config", cfg, tc.command, p.Code, p.Stderr, tc.code)
			}
			if cfg == bad && (!strings.Contains(p.Stderr, "bad.yaml:2:") || !strings.Contains(p.Stderr, "more_problems=1") || !strings.Contains(p.Stderr, "did you mean")) {
				t.Errorf("stderr %q does not name bad.yaml:2, the other problem and the fix", p.Stderr)
			}
			if tc.code == 0 && p.Stdout != "ran\n" {
				t.Errorf("stdout %q, want the command's", p.Stdout)
			}
		}
	}
	// Circuit protection stays on: 3 failures above (default trip_after 3)
	// opened the circuit, so the next run is skipped, and the config's
	// trouble is said once, as on every run until it is mended.
	if p := fbEnv(t, state, nil, "run", "--config", bad, "c0", "--", "true"); p.Code != exitOpen || countLines(p.Stderr, "level=") != 1 || countLines(p.Stderr, "config not used") != 1 {
		t.Errorf("after 3 failures: exit %d, stderr %q; want 75 and only the config line", p.Code, p.Stderr)
	}
	// Even -q prints the config line: it is fusebox's own trouble.
	if p := inproc(t, state, "run", "-q", "--config", bad, "c0", "--", "true"); p.Code != exitOpen || countLines(p.Stderr, "level=") != 1 || countLines(p.Stderr, "config not used") != 1 {
		t.Errorf("-q, in-process: exit %d, stderr %q; want 75 and only the config line", p.Code, p.Stderr)
	}
}

func TestRunUsesPerCircuitConfigAndFlagsOverrideIt(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("defaults:\n  backoff: 1ms\n  max_delay: 2ms\ncircuits:\n  flaky:\n    attempts: 2\n"), 0o600)
	p := inprocEnv(t, state, []string{"FUSEBOX_CONFIG=" + cfg}, testenv.RunArgs("flaky", []string{"-v"}, "false")...)
	if n := countLines(p.Stderr, "attempt failed"); n != 2 {
		t.Errorf("config attempts: 2, got %d attempts:\n%s", n, p.Stderr)
	}
	p = inprocEnv(t, state, []string{"FUSEBOX_CONFIG=" + cfg}, testenv.RunArgs("flaky", []string{"-v", "--attempts", "1"}, "false")...)
	if n := countLines(p.Stderr, "attempt failed"); n != 1 {
		t.Errorf("--attempts 1 over the config's 2, got %d attempts:\n%s", n, p.Stderr)
	}
}

func TestGCVersionAndCompletion(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	inproc(t, state, testenv.RunArgs("old", nil, "true")...)
	if p := inproc(t, state, "gc"); p.Code != 0 || !strings.Contains(p.Stdout, "removed 0 circuit(s)") {
		t.Errorf("gc: exit %d %q %q", p.Code, p.Stdout, p.Stderr)
	}
	if p := inproc(t, state, "version"); p.Code != 0 || !strings.HasPrefix(p.Stdout, "fusebox ") {
		t.Errorf("version: %q", p.Stdout)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if p := inproc(t, state, "completion", shell); p.Code != 0 || !strings.Contains(p.Stdout, "fusebox") {
			t.Errorf("completion %s: exit %d", shell, p.Code)
		}
	}
}

func TestLogFormats(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	p := inproc(t, state, append([]string{"-v", "--log-format", "json"}, testenv.RunArgs("j", fastPolicy, "false")...)...)
	numbers := 0
	for _, line := range strings.Split(strings.TrimSpace(p.Stderr), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil || m["circuit"] != "j" {
			t.Errorf("--log-format json line %q: %v", line, err)
		}
		switch m["msg"] {
		case "attempt failed":
			if _, ok := m["attempt"].(float64); !ok || m["attempts"] != 3.0 {
				t.Errorf("attempt and attempts are not numbers: %q", line)
			}
			numbers++
		case "waiting before retry":
			if w, ok := m["wait"].(float64); !ok || w < 0 || w > 0.005 { // full jitter: 0 to 5ms
				t.Errorf("wait is not a number of seconds: %q", line)
			}
			numbers++
		}
	}
	if numbers != 5 {
		t.Errorf("want 3 attempts and 2 waits logged:\n%s", p.Stderr)
	}
	p = inproc(t, state, append([]string{"--quiet"}, testenv.RunArgs("q", fastPolicy, "false")...)...)
	if p.Code != 1 || p.Stderr != "" {
		t.Errorf("--quiet: exit %d, want 1 and nothing on stderr (no trouble of fusebox's own):\n%s", p.Code, p.Stderr)
	}
}

func TestBadLogFormatIsAUsageError(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	for _, args := range [][]string{{"--log-format", "xml", "status"}, append([]string{"--log-format", "xml"}, testenv.RunArgs("x", nil, "true")...)} {
		p := inproc(t, state, args...)
		if p.Code != exitUsage || !strings.HasPrefix(p.Stderr, `fusebox: --log-format: want text or json, got "xml"`+"\n") {
			t.Errorf("fusebox %v: exit %d, stderr %q; want 64 and the flag's error", args, p.Code, p.Stderr)
		}
	}
}

func TestMistypedNamesAreRefusedWithASuggestion(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("circuits:\n  esp32-garage:\n    attempts: 2\n"), 0o600)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	if p := inprocEnv(t, state, env, testenv.RunArgs("zigbee2mqtt", nil, "true")...); p.Code != 0 {
		t.Fatalf("run: exit %d %s", p.Code, p.Stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"trip", "zigbe2mqtt", "--for", "10m"}, "no circuit or chain named zigbe2mqtt in the config or the state dir (did you mean zigbee2mqtt?); to trip a new circuit on purpose: fusebox trip --new zigbe2mqtt"},
		{[]string{"reset", "esp32-garag"}, "(did you mean esp32-garage?); nothing to reset"},
		{[]string{"status", "zigbee2mqtt", "nothing-like-it"}, "no circuit or chain named nothing-like-it in the config or the state dir\n"},
	} {
		p := inprocEnv(t, state, env, tc.args...)
		if p.Code != exitUsage || !strings.Contains(p.Stderr, tc.want) || p.Stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 64 and %q", tc.args, p.Code, p.Stdout, p.Stderr, tc.want)
		}
	}
	if st := statusOf(t, state, "zigbee2mqtt"); st["state"] != "closed" {
		t.Errorf("the typo steered the real circuit: %v", st)
	}
	// A configured circuit, a stored one, and a new one on purpose.
	for _, args := range [][]string{{"trip", "esp32-garage"}, {"status", "esp32-garage"}, {"trip", "zigbee2mqtt"}, {"reset", "zigbee2mqtt"}, {"trip", "--new", "garage-door"}, {"status", "garage-door"}} {
		if p := inprocEnv(t, state, env, args...); p.Code != 0 {
			t.Errorf("%v: exit %d %s", args, p.Code, p.Stderr)
		}
	}
}

func TestCompletionOffersCircuitEndpointAndChainNames(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("circuits:\n  esp32-garage: {}\n  owm: {http: {url: 'http://127.0.0.1:9/'}}\nchains:\n  weather: {endpoints: [owm]}\n"), 0o600)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	complete := func(args ...string) []string {
		t.Helper()
		p := inprocEnv(t, state, env, append([]string{"__complete"}, args...)...)
		if p.Code != 0 {
			t.Fatalf("__complete %v: exit %d %s", args, p.Code, p.Stderr)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(p.Stdout), "\n") {
			if !strings.HasPrefix(l, ":") { // the directive
				names = append(names, l)
			}
		}
		return names
	}
	// Before any run: the config's names, and no state dir created.
	if got := strings.Join(complete("status", ""), " "); got != "esp32-garage owm weather" {
		t.Errorf("status: %q", got)
	}
	if _, err := os.Stat(state); err == nil {
		t.Error("completion created the state dir")
	}
	if p := inprocEnv(t, state, env, testenv.RunArgs("zigbee2mqtt", nil, "true")...); p.Code != 0 {
		t.Fatal(p.Stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", ""}, "esp32-garage owm weather zigbee2mqtt"},
		{[]string{"run", "zig"}, "zigbee2mqtt"},
		{[]string{"trip", "e"}, "esp32-garage"},
		{[]string{"reset", ""}, "esp32-garage owm weather zigbee2mqtt"},
		{[]string{"status", "owm", ""}, "esp32-garage weather zigbee2mqtt"},
		{[]string{"call", ""}, "owm weather"},
	} {
		if got := strings.Join(complete(tc.args...), " "); got != tc.want {
			t.Errorf("complete %q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	flag, cmd := inproc(t, state, "--version"), inproc(t, state, "version")
	if flag.Code != 0 || flag.Stdout != cmd.Stdout || !strings.HasPrefix(flag.Stdout, "fusebox ") {
		t.Errorf("--version: exit %d %q, want what version prints, %q", flag.Code, flag.Stdout, cmd.Stdout)
	}
}

// run evaluates no jq, so a broken expression in some endpoint's config
// costs the run neither its own circuit's policy nor a line of stderr; call
// and validate, which do evaluate jq, still name it with its line.
func TestRunIgnoresABrokenJQExpressionThatCallReports(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("defaults:\n  backoff: 1ms\ncircuits:\n  flaky:\n    attempts: 2\n"+
		"  weather:\n    http:\n      url: http://127.0.0.1:1/\n      extract: .main | bad(\n"), 0o600)
	env := []string{"FUSEBOX_CONFIG=" + cfg}
	p := inprocEnv(t, state, env, testenv.RunArgs("flaky", []string{"-v"}, "false")...)
	if n := countLines(p.Stderr, "attempt failed"); n != 2 || strings.Contains(p.Stderr, "config not used") {
		t.Errorf("run: %d attempts (want the config's 2), stderr:\n%s", n, p.Stderr)
	}
	for _, args := range [][]string{{"validate"}, {"call", "weather"}} {
		p := inprocEnv(t, state, env, args...)
		if p.Code != exitConfig || !strings.Contains(p.Stderr+p.Stdout, "c.yaml:9:") || !strings.Contains(p.Stderr+p.Stdout, "invalid jq") {
			t.Errorf("%v: exit %d, output %q %q; want %d naming c.yaml:9 and the jq", args, p.Code, p.Stdout, p.Stderr, exitConfig)
		}
	}
}
