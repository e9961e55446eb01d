package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestACallToAClosedStdoutExits141: `fusebox call ... | head -c0`: the
// answer cannot be written, and fusebox exits 141 as a shell reports a
// command SIGPIPE ended, with --json as without.
func TestACallToAClosedStdoutExits141(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "21.5") }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"the body", []string{"call", "--url", srv.URL, "weather"}},
		{"the --json envelope", []string{"call", "--json", "--url", srv.URL, "weather"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			defer w.Close()
			home := t.TempDir()
			var stderr testenv.Buffer
			a := newApp()
			a.stdout, a.stderr, a.stderrFile = w, &stderr, nil
			a.getenv = func(k string) string {
				return map[string]string{"HOME": home, "FUSEBOX_STATE_DIR": filepath.Join(home, "state")}[k]
			}
			a.home = home
			if code := execute(context.Background(), a, tc.args); code != 141 {
				t.Errorf("exit %d, want 141\n%s", code, stderr.String())
			}
		})
	}
}
