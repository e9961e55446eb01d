//go:build linux

package packaging_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// systemd is not PID 1 on the test machines, so the job unit's ExecStart=
// line is run here as systemd.exec(5) and systemd.service(5) say it runs
// it: in a mount namespace of its own where the file system is read-only
// but for the state dir and ReadWritePaths= (ProtectSystem=strict), /home,
// /root and /run/user are empty (ProtectHome=yes); as User= and Group=,
// with no other groups and no new privileges; with StateDirectory= made
// and given to them, StateDirectoryMode=; UMask=; systemd's environment
// for a system service (PATH, HOME, USER, LOGNAME, SHELL, STATE_DIRECTORY)
// and Environment=. Its exit status is read through SuccessExitStatus=.
// Every path the unit names below / is taken below the test's own root.
// PrivateTmp= is left out: the test's files live in /tmp.

// unitFile is a unit's settings, by section, each key's values in order.
type unitFile map[string]map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: a line that is no setting: %q", path, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// one returns the only value of key in section, failing the test unless
// there is exactly one.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	if v := u[section][key]; len(v) == 1 {
		return v[0]
	}
	t.Fatalf("the unit has %d values of %s= in [%s], want one", len(u[section][key]), key, section)
	return ""
}

// jobHost is the test's root: where the unit's /etc/fusebox, /var/lib,
// /usr/local/bin and the job's own paths are, and the user the unit runs as.
type jobHost struct {
	root     string
	uid, gid int
}

// path is the unit's absolute path p below the test's root.
func (h *jobHost) path(p string) string { return filepath.Join(h.root, p) }

// unitRun is one start of the unit: its exit status, output, and whether
// systemd counted it a success.
type unitRun struct {
	code           int
	stdout, stderr string
	success        bool
}

// start runs the unit instance's ExecStart= as systemd would, with the
// drop-in's [Service] settings (ReadWritePaths=, ProtectHome=) over the
// unit's, and the args of ExecStart= changed by edit when it is not nil.
func (h *jobHost) start(t *testing.T, u, dropIn unitFile, instance string, edit func([]string) []string) unitRun {
	t.Helper()
	svc := u["Service"]
	set := func(key string) []string {
		if v, ok := dropIn["Service"][key]; ok {
			return v
		}
		return svc[key]
	}
	for key, want := range map[string]string{"Type": "oneshot", "ProtectSystem": "strict", "NoNewPrivileges": "yes"} {
		if v := u.one(t, "Service", key); v != want {
			t.Fatalf("the unit has %s=%s; this run of it does what %s=%s does", key, v, key, want)
		}
	}
	under := func(s string) string { // the unit's paths, below the root
		for _, p := range []string{"/usr/local/bin/", "/etc/fusebox/"} {
			s = strings.ReplaceAll(s, p, h.path(p)+"/")
		}
		return s
	}
	argv := strings.Fields(under(strings.ReplaceAll(u.one(t, "Service", "ExecStart"), "%i", instance)))
	if edit != nil {
		argv = edit(argv)
	}
	state := h.path("/var/lib/" + u.one(t, "Service", "StateDirectory"))
	mode, err := strconv.ParseUint(u.one(t, "Service", "StateDirectoryMode"), 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	// StateDirectory=: made, given to User= and Group= with all it holds,
	// its mode StateDirectoryMode=.
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(state, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Lchown(p, h.uid, h.gid)
		}
		return err
	})
	if err := os.Chmod(state, os.FileMode(mode&0o777)|os.ModeSetgid*os.FileMode(mode>>10&1)); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", "LANG=C.UTF-8",
		"HOME=" + state, "USER=fusebox", "LOGNAME=fusebox", "SHELL=/usr/sbin/nologin", "STATE_DIRECTORY=" + state}
	for _, e := range svc["Environment"] {
		env = append(env, under(e))
	}
	writable := append([]string{state}, set("ReadWritePaths")...)
	var script strings.Builder
	script.WriteString("set -e\n")
	// ProtectSystem=strict: every mount read-only, but the API file systems.
	script.WriteString(`awk '{print $2}' /proc/self/mounts | sort -u | while read -r m; do
	case $m in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac
	mount -o remount,bind,ro "$m" 2>/dev/null || mount --bind "$m" "$m" && mount -o remount,bind,ro "$m"
done
`)
	for _, w := range writable {
		fmt.Fprintf(&script, "mount --bind %[1]q %[1]q && mount -o remount,bind,rw %[1]q\n", under(w))
	}
	switch p := set("ProtectHome"); {
	case slices.Equal(p, []string{"yes"}):
		script.WriteString("for d in /home /root /run/user; do [ -d $d ] && mount -t tmpfs -o ro,mode=0755 fusebox-test-protect-home $d; done; true\n")
	case slices.Equal(p, []string{"read-only"}):
	default:
		t.Fatalf("ProtectHome=%v: this run of the unit knows yes and read-only", p)
	}
	umask := u.one(t, "Service", "UMask")
	fmt.Fprintf(&script, "umask %s\nexec setpriv --reuid=%d --regid=%d --clear-groups --no-new-privs -- env -i \"$@\"\n", umask, h.uid, h.gid)
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script.String(), "sh"},
		append(env, argv...)...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("start the unit: %v", err)
	}
	r := unitRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	r.success = r.code == 0 || slices.Contains(strings.Fields(strings.Join(svc["SuccessExitStatus"], " ")), strconv.Itoa(r.code))
	return r
}

// newJobHost makes the test's root: fusebox installed as the docs say
// (install -m 0755 fusebox /usr/local/bin/fusebox), config, the job
// nas-backup, which copies /srv/photos to the NAS's share at /mnt/nas
// while the share is there, and a user for the unit that is none of the
// machine's.
func newJobHost(t *testing.T, config string) *jobHost {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "running a unit as its User= needs root")
	}
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "%s is not installed (util-linux): %v", tool, err)
		}
	}
	h := &jobHost{root: t.TempDir(), uid: 61000 + os.Getpid()%1000, gid: 61000 + os.Getpid()%1000}
	for d := h.root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil { // t.TempDir's are 0700
			t.Fatal(err)
		}
	}
	bin, err := os.ReadFile(fuseboxBin)
	if err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`#!/bin/sh
# nas-backup: /srv/photos to the NAS's share.
set -e
if [ ! -e %[1]s/.online ]; then echo "nas-backup: the NAS's share is not mounted" >&2; exit 1; fi
cp -R %[2]s/. %[1]s/photos/
`, h.path("/mnt/nas"), h.path("/srv/photos"))
	for p, f := range map[string]struct {
		mode os.FileMode
		text []byte
	}{
		"/usr/local/bin/fusebox":       {0o755, bin},
		"/etc/fusebox/config.yaml":     {0o644, []byte(config)},
		"/etc/fusebox/jobs/nas-backup": {0o755, []byte(job)},
		"/srv/photos/garden.jpg":       {0o644, []byte("a photo\n")},
	} {
		if err := os.MkdirAll(filepath.Dir(h.path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(h.path(p), f.text, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(h.path("/mnt/nas/photos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(h.path("/mnt/nas/photos"), h.uid, h.gid); err != nil {
		t.Fatal(err)
	}
	return h
}

// nasOnline mounts the NAS's share, or unmounts it: the job fails while
// it is not there.
func (h *jobHost) nasOnline(t *testing.T, online bool) {
	t.Helper()
	p := h.path("/mnt/nas/.online")
	if online {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// circuit returns the state of the circuit name, as `fusebox status
// --json` shows it from the state dir.
func (h *jobHost) circuit(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command(fuseboxBin, "status", "--json")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root, "FUSEBOX_STATE_DIR=" + h.path("/var/lib/fusebox"),
		"FUSEBOX_CONFIG=" + h.path("/etc/fusebox/config.yaml")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fusebox status --json: %v\n%s", err, out)
	}
	var rows []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("fusebox status --json: %v\n%s", err, out)
	}
	for _, r := range rows {
		if r.Name == name {
			return r.State
		}
	}
	return ""
}

// waitHalfOpen waits until the circuit's open period has passed: the
// next run probes. It watches the state, not the clock.
func (h *jobHost) waitHalfOpen(t *testing.T, name string) {
	t.Helper()
	for i := 0; h.circuit(t, name) != "half_open"; i++ {
		if i == 4000 {
			t.Fatalf("the circuit %s did not become half-open", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestJobUnitRunsAsSystemdRunsIt runs fusebox-job@nas-backup.service's
// ExecStart= through an outage of the NAS's share, as systemd would run
// it, with the drop-in docs/schedulers.md gives: the unit fails once, on
// the run that opened the circuit, and never on a skip nor on a failed
// probe, which the same line without --skip-told fails on. Without the
// drop-in the hardening keeps the job from writing to the share, as the
// unit and the docs say.
func TestJobUnitRunsAsSystemdRunsIt(t *testing.T) {
	t.Parallel()
	u := readUnit(t, "systemd/fusebox-job@.service")
	unitText, err := os.ReadFile("systemd/fusebox-job@.service")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(doctext.Block(t, "docs/schedulers.md", "ini", "ExecStart=")) {
		if !strings.Contains(string(unitText), line) {
			t.Errorf("docs/schedulers.md shows %q, which the job unit does not have", line)
		}
	}
	var dropIn unitFile
	{
		text := doctext.Block(t, "docs/schedulers.md", "ini", "ReadWritePaths=")
		f := filepath.Join(t.TempDir(), "override.conf")
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		dropIn = readUnit(t, f)
		// packaging/README.md's install of the job writes that drop-in.
		if readme, err := os.ReadFile("README.md"); err != nil || !strings.Contains(string(readme), "<<'EOF'\n"+text+"EOF\n") {
			t.Errorf("README.md's job install does not write the drop-in of docs/schedulers.md (%v):\n%s", err, text)
		}
	}
	if rw := dropIn["Service"]["ReadWritePaths"]; !slices.Equal(rw, []string{"/mnt/nas"}) {
		t.Fatalf("the drop-in of docs/schedulers.md has ReadWritePaths=%q; this test's job writes to /mnt/nas", rw)
	}
	// The drop-in's paths are the unit's: below the test's root.
	// The policy's waits cut from seconds to milliseconds, as the
	// scheduler recipes of cmd/fusebox do; open_max stays below the
	// timer's period, as the default's 5m does.
	h := newJobHost(t, "circuits:\n  nas-backup: {backoff: 20ms, max_delay: 100ms, open_for: 100ms, open_max: 200ms}\n")
	dropIn["Service"]["ReadWritePaths"] = []string{h.path("/mnt/nas")}

	t.Run("as shipped, the job writes nowhere but its state dir", func(t *testing.T) {
		h.nasOnline(t, true)
		r := h.start(t, u, nil, "nas-backup", nil)
		if r.success || !strings.Contains(r.stderr, "Read-only file system") {
			t.Errorf("exit %d, success %v, stderr:\n%s\nwant the job refused the write to /mnt/nas", r.code, r.success, r.stderr)
		}
		// That failure opened the circuit: start again from a closed one.
		reset := exec.Command(fuseboxBin, "reset", "nas-backup")
		reset.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root, "FUSEBOX_STATE_DIR=" + h.path("/var/lib/fusebox")}
		if out, err := reset.CombinedOutput(); err != nil {
			t.Fatalf("fusebox reset: %v\n%s", err, out)
		}
	})

	type tick struct {
		phase string
		unitRun
	}
	var ticks []tick
	run := func(phase string, edit func([]string) []string) unitRun {
		t.Helper()
		r := h.start(t, u, dropIn, "nas-backup", edit)
		ticks = append(ticks, tick{phase, r})
		return r
	}
	r := run("healthy", nil)
	if r.code != 0 || r.stdout+r.stderr != "" {
		t.Fatalf("the job with the NAS's share there: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(h.path("/mnt/nas/photos/garden.jpg")); err != nil || string(b) != "a photo\n" {
		t.Errorf("the backup on the share: %q, %v", b, err)
	}
	st, err := os.Stat(h.path("/var/lib/fusebox"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSetgid == 0 || st.Mode().Perm() != 0o770 {
		t.Errorf("the state dir is %v, want 2770 as StateDirectoryMode= makes it", st.Mode())
	}
	if h.circuit(t, "nas-backup") != "closed" {
		t.Errorf("the job's circuit is %q in the unit's state dir, want closed", h.circuit(t, "nas-backup"))
	}

	h.nasOnline(t, false)
	opener := run("outage", nil)
	if opener.success || !strings.Contains(opener.stderr, "not mounted") {
		t.Errorf("the run that found the share gone: exit %d, success %v; want the unit failed with the job's error:\n%s", opener.code, opener.success, opener.stderr)
	}
	run("outage", nil) // the circuit open: a skip
	for range 3 {
		h.waitHalfOpen(t, "nas-backup")
		run("outage", nil) // a probe that fails
	}
	h.waitHalfOpen(t, "nas-backup")
	without := run("outage, without --skip-told", func(argv []string) []string {
		return slices.DeleteFunc(argv, func(a string) bool { return a == "--skip-told" })
	})
	h.nasOnline(t, true)
	h.waitHalfOpen(t, "nas-backup")
	if r := run("recovery", nil); !r.success || h.circuit(t, "nas-backup") != "closed" {
		t.Errorf("the run that found the share back: exit %d, circuit %s; want success and the circuit closed", r.code, h.circuit(t, "nas-backup"))
	}

	var failed []string
	for i, tk := range ticks {
		line := fmt.Sprintf("start %d (%s): exit %d", i, tk.phase, tk.code)
		t.Log(line)
		if !tk.success {
			failed = append(failed, line)
		}
	}
	if len(failed) != 2 || ticks[1].success || ticks[len(ticks)-2].success {
		t.Errorf("the failed starts (each an OnFailure=): %q; want the opener's and the probe run without --skip-told only", failed)
	}
	if without.code != 1 {
		t.Errorf("the failed probe without --skip-told exited %d, want the job's 1", without.code)
	}
}
