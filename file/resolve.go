package file

import (
	"path/filepath"
	"strings"
)

// ResolveDir picks the state dir and says where the choice came from, first
// match wins:
//
//	dir                          source
//	flag                         "--state"
//	$FUSEBOX_STATE_DIR           "$FUSEBOX_STATE_DIR"
//	configured (config state:)   "config"
//	$STATE_DIRECTORY             "$STATE_DIRECTORY" (systemd; the first of several)
//	/var/lib/fusebox             "default for root" (when euid is 0)
//	$XDG_STATE_HOME/fusebox      "$XDG_STATE_HOME" (when absolute, as XDG requires)
//	home/.local/state/fusebox    "$HOME"
//
// It returns "", "" when none applies (no home). A runtime dir
// ($XDG_RUNTIME_DIR, /run) is never a default: it is emptied at logout or
// boot, and an open circuit would close with it.
func ResolveDir(flag, configured string, getenv func(string) string, euid int, home string) (dir, source string) {
	switch {
	case flag != "":
		return flag, "--state"
	case getenv("FUSEBOX_STATE_DIR") != "":
		return getenv("FUSEBOX_STATE_DIR"), "$FUSEBOX_STATE_DIR"
	case configured != "":
		return configured, "config"
	}
	if first, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":"); first != "" {
		return first, "$STATE_DIRECTORY"
	}
	if euid == 0 {
		return "/var/lib/fusebox", "default for root"
	}
	if xdg := getenv("XDG_STATE_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "fusebox"), "$XDG_STATE_HOME"
	}
	if home != "" {
		return filepath.Join(home, ".local", "state", "fusebox"), "$HOME"
	}
	return "", ""
}
