package file_test

import (
	"testing"

	"github.com/fusebox-hq/fusebox/file"
)

func TestResolveDir(t *testing.T) {
	all := map[string]string{
		"FUSEBOX_STATE_DIR": "/env/fusebox",
		"STATE_DIRECTORY":   "/var/lib/unit:/var/lib/other",
		"XDG_STATE_HOME":    "/home/ann/.state",
		"XDG_RUNTIME_DIR":   "/run/user/1000",
	}
	without := func(keys ...string) map[string]string {
		env := map[string]string{}
		for k, v := range all {
			env[k] = v
		}
		for _, k := range keys {
			delete(env, k)
		}
		return env
	}
	for _, c := range []struct {
		name             string
		flag, configured string
		env              map[string]string
		euid             int
		home             string
		dir, source      string
	}{
		{"--state wins", "/flag", "/conf", all, 0, "/root", "/flag", "--state"},
		{"then $FUSEBOX_STATE_DIR", "", "/conf", all, 0, "/root", "/env/fusebox", "$FUSEBOX_STATE_DIR"},
		{"then the config file", "", "/conf", without("FUSEBOX_STATE_DIR"), 0, "/root", "/conf", "config"},
		{"then systemd's first state directory", "", "", without("FUSEBOX_STATE_DIR"), 1000, "/home/ann", "/var/lib/unit", "$STATE_DIRECTORY"},
		{"root defaults to /var/lib/fusebox", "", "", without("FUSEBOX_STATE_DIR", "STATE_DIRECTORY"), 0, "/root", "/var/lib/fusebox", "default for root"},
		{"the fusebox user, whose home it is, to /var/lib/fusebox", "", "", without("FUSEBOX_STATE_DIR", "STATE_DIRECTORY"), 999, "/var/lib/fusebox/", "/var/lib/fusebox", "default for the fusebox user"},
		{"a user to $XDG_STATE_HOME/fusebox", "", "", without("FUSEBOX_STATE_DIR", "STATE_DIRECTORY"), 1000, "/home/ann", "/home/ann/.state/fusebox", "$XDG_STATE_HOME"},
		{"a relative $XDG_STATE_HOME is ignored", "", "", map[string]string{"XDG_STATE_HOME": "rel"}, 1000, "/home/ann", "/home/ann/.local/state/fusebox", "$HOME"},
		{"then ~/.local/state/fusebox, never the runtime dir", "", "", without("FUSEBOX_STATE_DIR", "STATE_DIRECTORY", "XDG_STATE_HOME"), 1000, "/home/ann", "/home/ann/.local/state/fusebox", "$HOME"},
		{"nothing without a home", "", "", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, 1000, "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, source := file.ResolveDir(c.flag, c.configured, func(k string) string { return c.env[k] }, c.euid, c.home)
			if dir != c.dir || source != c.source {
				t.Errorf("ResolveDir = %q from %q, want %q from %q", dir, source, c.dir, c.source)
			}
		})
	}
}
