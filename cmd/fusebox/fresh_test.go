package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestSixScriptsAskingTogetherCostOneUpstreamCall: with fresh: set, cron
// jobs that call the same chain in the same second share one upstream call.
func TestSixScriptsAskingTogetherCostOneUpstreamCall(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(200 * time.Millisecond) // a slow weather API: the others arrive meanwhile
		fmt.Fprintln(w, `{"main":{"temp":21.5}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`circuits:
  owm:
    http:
      url: %s/weather
      extract: .main.temp
chains:
  weather:
    endpoints: [owm]
    fresh: 10m
`, srv.URL)), 0o600)
	state := filepath.Join(dir, "state")
	var wg sync.WaitGroup
	outs := make([]testenv.Proc, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = fbEnv(t, state, []string{"FUSEBOX_CONFIG=" + cfg}, "call", "weather")
		}()
	}
	wg.Wait()
	for i, p := range outs {
		if p.Code != 0 || p.Stdout != "21.5\n" {
			t.Errorf("script %d: exit %d, %q\n%s", i, p.Code, p.Stdout, p.Stderr)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("six scripts together made %d upstream calls, want 1", n)
	}
}
