package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// systemPath is the config file used when no other is found.
const systemPath = "/etc/fusebox/config.yaml"

// Find returns the config file to load: the --config flag, else
// $FUSEBOX_CONFIG (both explicit: Load must then fail if the file is
// missing), else home/.config/fusebox/config.yaml, else systemPath, the
// first of those two that exists. It returns "" when there is none. A file
// whose existence cannot be checked (permission denied) counts as existing,
// so that Load reports why it cannot be read rather than ignoring it.
func Find(flag string, getenv func(string) string, home string) (path string, explicit bool) {
	return find(flag, getenv, home, systemPath)
}

// find is Find with the system path given, so tests do not depend on what
// the machine holds at systemPath.
func find(flag string, getenv func(string) string, home, system string) (path string, explicit bool) {
	if flag != "" {
		return flag, true
	}
	if getenv != nil {
		if p := getenv("FUSEBOX_CONFIG"); p != "" {
			return p, true
		}
	}
	candidates := []string{system}
	if home != "" {
		candidates = []string{filepath.Join(home, ".config", "fusebox", "config.yaml"), system}
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			return p, false
		}
	}
	return "", false
}
