package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestServeAddonOptions: the Home Assistant add-on's daemon takes its token
// and host names from the options file the Supervisor writes, and accepts
// the container's hostname.
func TestServeAddonOptions(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	opts := filepath.Join(dir, "options.json")
	if err := os.WriteFile(opts, []byte(`{"token": " s3cret\n", "hosts": ["fusebox.lan"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	d := testenv.StartDaemon(t, testenv.FuseboxCmd(fuseboxBin, state, nil, "serve", "--listen", "127.0.0.1:0", "--addon-options", opts))
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	get := func(host, token string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+d.Addr+"/api/circuits", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, host, token string
		want              int
	}{
		{"the token from the options, trimmed", d.Addr, "s3cret", 200},
		{"no token", d.Addr, "", 401},
		{"a wrong token", d.Addr, "s3cre", 401},
		{"a host name from the options", "fusebox.lan:" + strings.Split(d.Addr, ":")[1], "s3cret", 200},
		{"the container's hostname", hostname, "s3cret", 200},
		{"another name", "elsewhere.lan", "s3cret", 421},
	} {
		if got := get(c.host, c.token); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestServeAddonOptionsRefused: options the daemon cannot serve with stop
// it at once (exit 78), saying what to fix.
func TestServeAddonOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, options, want string }{
		{"an empty token", `{"token": "", "hosts": []}`, "the token is empty: set one in the add-on's Configuration tab"},
		{"an unknown option", `{"token": "x", "tokn": "y"}`, `unknown field "tokn"`},
		{"not JSON", `token: x`, "invalid character"},
	} {
		opts := filepath.Join(dir, "options.json")
		if err := os.WriteFile(opts, []byte(c.options), 0o600); err != nil {
			t.Fatal(err)
		}
		p := inproc(t, filepath.Join(dir, "state"), "serve", "--listen", "127.0.0.1:0", "--addon-options", opts)
		if p.Code != 78 || !strings.Contains(p.Stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want 78 and %q", c.name, p.Code, p.Stderr, c.want)
		}
	}
	p := inproc(t, filepath.Join(dir, "state"), "serve", "--addon-options", filepath.Join(dir, "options.json"), "--token-file", filepath.Join(dir, "options.json"))
	if p.Code != 64 {
		t.Errorf("--addon-options with --token-file: exit %d, want 64 (%s)", p.Code, p.Stderr)
	}
}
