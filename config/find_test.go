package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	// The system path is one the test owns, so the machine's own
	// /etc/fusebox does not change the answers.
	system := filepath.Join(t.TempDir(), "etc", "config.yaml")
	home := t.TempDir()
	noEnv := func(string) string { return "" }
	env := func(k string) string {
		if k == "FUSEBOX_CONFIG" {
			return "/from/env.yaml"
		}
		return ""
	}
	check := func(name, gotPath string, gotExplicit bool, wantPath string, wantExplicit bool) {
		t.Helper()
		if gotPath != wantPath || gotExplicit != wantExplicit {
			t.Errorf("%s: got %q, %v; want %q, %v", name, gotPath, gotExplicit, wantPath, wantExplicit)
		}
	}

	p, e := find("/from/flag.yaml", env, home, system)
	check("flag first", p, e, "/from/flag.yaml", true)
	p, e = find("", env, home, system)
	check("then $FUSEBOX_CONFIG, even if missing", p, e, "/from/env.yaml", true)
	p, e = find("", noEnv, home, system)
	check("nothing found", p, e, "", false)
	p, e = find("", nil, "", system)
	check("no env, no home", p, e, "", false)

	touch := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	touch(system)
	p, e = find("", noEnv, home, system)
	check("the system file when the user has none", p, e, system, false)
	p, e = find("", nil, "", system)
	check("the system file without a home", p, e, system, false)

	user := filepath.Join(home, ".config", "fusebox", "config.yaml")
	touch(user)
	p, e = find("", noEnv, home, system)
	check("the user's file when it exists, before the system's", p, e, user, false)
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	src := "state: ${FUSEBOX_TEST_STATE}\ncircuits:\n  a:\n    http: {url: https://x, headers: {K: !secret k}}\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FUSEBOX_TEST_STATE", "/srv/state")

	_, err := Load(path)
	if errs := configErrors(t, err); len(errs) != 1 || errs[0].Line != 4 {
		t.Fatalf("without secrets.yaml: got %v, want one error at line 4", err)
	}

	if err := os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte("k: v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != "/srv/state" || c.Circuits["a"].Endpoint.Headers["K"] != "v" {
		t.Errorf("got state %q, endpoint %+v", c.State, c.Circuits["a"].Endpoint)
	}

	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: got %v, want a not-exist error", err)
	}
}
