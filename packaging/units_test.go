//go:build linux

package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
	"github.com/fusebox-hq/fusebox/sysclock"
)

// TestTheUnitsLeaveTheBootClockReadable reads each service unit's sandbox
// and checks that it leaves what sysclock reads: the boot ID file (which
// ProcSubset=pid, an InaccessiblePaths= or a TemporaryFileSystem= over it
// would hide) and the system calls of CLOCK_BOOTTIME and the file's read.
// Without them every state record loses its boot clock, and an open
// period is measured on the wall clock alone, which on a Pi without a
// real-time clock jumps when NTP first sets it.
func TestTheUnitsLeaveTheBootClockReadable(t *testing.T) {
	units, err := filepath.Glob("systemd/*.service")
	if err != nil || len(units) == 0 {
		t.Fatalf("no units in systemd/ (%v)", err)
	}
	for _, unit := range units {
		t.Run(filepath.Base(unit), func(t *testing.T) {
			b, err := os.ReadFile(unit)
			if err != nil {
				t.Fatal(err)
			}
			settings := serviceSettings(string(b))
			for _, v := range settings["ProcSubset"] {
				if v == "pid" {
					t.Errorf("ProcSubset=pid hides %s, all of /proc but the processes' own dirs", sysclock.BootIDPath)
				}
			}
			for _, key := range []string{"InaccessiblePaths", "TemporaryFileSystem"} {
				for _, v := range settings[key] {
					for _, p := range strings.Fields(v) {
						p, _, _ = strings.Cut(strings.TrimLeft(p, "-+"), ":") // TemporaryFileSystem=PATH:OPTIONS
						if p = filepath.Clean(p); sysclock.BootIDPath == p || strings.HasPrefix(sysclock.BootIDPath, p+"/") || p == "/" {
							t.Errorf("%s=%s hides %s", key, v, sysclock.BootIDPath)
						}
					}
				}
			}
			filters := settings["SystemCallFilter"]
			if len(filters) == 0 {
				return
			}
			if _, err := exec.LookPath("systemd-analyze"); err != nil {
				testenv.Skip(t, "reading SystemCallFilter= needs systemd-analyze (apt-get install systemd): %v", err)
			}
			allowed, denied := map[string]bool{}, map[string]bool{}
			for _, f := range filters {
				into := allowed
				if strings.HasPrefix(f, "~") {
					into, f = denied, f[1:]
				}
				for _, name := range strings.Fields(f) {
					expandSyscalls(t, name, into)
				}
			}
			for _, call := range []string{"clock_gettime", "openat", "read", "close"} {
				if !allowed[call] || denied[call] {
					t.Errorf("SystemCallFilter= %q does not let %s through, which the boot clock needs", filters, call)
				}
			}
		})
	}
}

// serviceSettings returns the [Service] section's settings, each key's
// values in order.
func serviceSettings(unit string) map[string][]string {
	settings := map[string][]string{}
	section := ""
	for line := range strings.Lines(unit) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			if k, v, ok := strings.Cut(line, "="); ok {
				settings[strings.TrimSpace(k)] = append(settings[strings.TrimSpace(k)], strings.TrimSpace(v))
			}
		}
	}
	return settings
}

var syscallName = regexp.MustCompile(`^[a-z0-9_]+$`)

// expandSyscalls adds the system calls name stands for to into: a call,
// or a @group as systemd-analyze syscall-filter lists it, groups within
// it expanded.
func expandSyscalls(t *testing.T, name string, into map[string]bool) {
	t.Helper()
	if !strings.HasPrefix(name, "@") {
		into[name] = true
		return
	}
	out, err := exec.Command("systemd-analyze", "syscall-filter", name).Output()
	if err != nil {
		t.Fatalf("systemd-analyze syscall-filter %s: %v", name, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines[1:] { // the first names the group
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "@"):
			expandSyscalls(t, l, into)
		case syscallName.MatchString(l):
			into[l] = true
		}
	}
}
