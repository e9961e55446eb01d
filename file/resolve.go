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
//	/var/lib/fusebox             "default for the fusebox user" (home is /var/lib/fusebox)
//	$XDG_STATE_HOME/fusebox      "$XDG_STATE_HOME" (when absolute, as XDG requires)
//	home/.local/state/fusebox    "$HOME"
//
// The system dir is the default of root's cron and of the user whose home
// it is, the .deb's fusebox user (packaging/): the daemon's store, not a
// second one under .local. It returns "", "" when none applies (no home). A runtime dir
// ($XDG_RUNTIME_DIR, /run) is never a default: it is emptied at logout or
// boot, and an open circuit would close with it.
// SystemDir is the host's state dir: root's, and the .deb's fusebox
// user's, whose home it is.
const SystemDir = "/var/lib/fusebox"

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
		return SystemDir, "default for root"
	}
	if filepath.Clean(home) == SystemDir {
		return SystemDir, "default for the fusebox user"
	}
	if xdg := getenv("XDG_STATE_HOME"); filepath.IsAbs(xdg) {
		return filepath.Join(xdg, "fusebox"), "$XDG_STATE_HOME"
	}
	if home != "" {
		return filepath.Join(home, ".local", "state", "fusebox"), "$HOME"
	}
	return "", ""
}
