package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chainBehindADownPrimary writes a config whose chain weather asks primary
// (503, opening at its first failure) and then secondary, which answers
// while up is set; it returns the config's path.
func chainBehindADownPrimary(t *testing.T, dir string, up *bool, chainKeys string) string {
	t.Helper()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bridge offline", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !*up {
			http.Error(w, "down too", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "21.5")
	}))
	t.Cleanup(second.Close)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`circuits:
  primary:
    attempts: 1
    trip_after: 1
    http: {url: %s/}
  secondary:
    attempts: 1
    trip_after: 1
    http: {url: %s/}
chains:
  weather:
    endpoints: [primary, secondary]
%s`, down.URL, second.URL, chainKeys)), 0o600)
	return cfg
}

// TestACallItsFallbackAnsweredPrintsNothing: the primary opens during a
// chain call the secondary answers. The opening is in the event log and
// status, not on the answered call's stderr (under cron, a mail); once
// nothing answers, the call's failure and the opening are printed.
func TestACallItsFallbackAnsweredPrintsNothing(t *testing.T) {
	for _, tc := range []struct{ name, chainKeys string }{
		{"in turn", ""},
		{"hedged: each endpoint on a goroutine of its own", "    hedge: 1s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { fallbackAnsweredPrintsNothing(t, tc.chainKeys) })
	}
}

func fallbackAnsweredPrintsNothing(t *testing.T, chainKeys string) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	up := true
	env := []string{"FUSEBOX_CONFIG=" + chainBehindADownPrimary(t, dir, &up, chainKeys)}

	p := inprocEnv(t, state, env, "call", "weather")
	if p.Code != 0 || p.Stdout != "21.5\n" || p.Stderr != "" {
		t.Errorf("answered by the secondary: exit %d, stdout %q, stderr %q; want 0, the answer and nothing on stderr", p.Code, p.Stdout, p.Stderr)
	}
	if st := statusOf(t, state, "primary"); st["state"] != "open" {
		t.Fatalf("primary is %v after its failure, want open", st["state"])
	}
	events, err := os.ReadFile(filepath.Join(state, "events", "primary.jsonl"))
	if err != nil || !strings.Contains(string(events), `"to":"open"`) {
		t.Errorf("the primary's opening is not in its event log (%v):\n%s", err, events)
	}

	// -v shows every line as it comes, the opening too.
	dir2 := t.TempDir()
	env2 := []string{"FUSEBOX_CONFIG=" + chainBehindADownPrimary(t, dir2, &up, chainKeys)}
	if p := inprocEnv(t, filepath.Join(dir2, "state"), env2, "-v", "call", "weather"); p.Code != 0 || !strings.Contains(p.Stderr, "circuit opened") {
		t.Errorf("-v: exit %d, stderr %q; want 0 and the opening", p.Code, p.Stderr)
	}

	// Nothing answers: the secondary's opening is this call's news, printed
	// before its failure line.
	up = false
	p = inprocEnv(t, state, env, "call", "weather")
	opened, failed := strings.Index(p.Stderr, "circuit opened"), strings.Index(p.Stderr, "every endpoint failed")
	if p.Code != exitUnavailable || opened < 0 || failed < opened || !strings.Contains(p.Stderr, "circuit=secondary") {
		t.Errorf("nothing answered: exit %d, stderr %q; want 69, the secondary's opening, then the failure", p.Code, p.Stderr)
	}
}
