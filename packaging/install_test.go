//go:build linux

package packaging_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// The .deb is installed for real: dpkg -i, with its postinst's user,
// group and state dir, then purged. So that the test never meets, nor
// touches, a /var/lib/fusebox of this machine's (root's default state dir,
// which other tests or people may be using), everything runs in a mount
// namespace of its own whose /var/lib is the machine's without fusebox:
// dpkg's database, /etc and /usr are the machine's.

// hideStateDir, run in a new mount namespace with the dir for the
// machine's /var/lib as $1, gives the namespace a /var/lib holding every
// entry of the machine's but fusebox.
const hideStateDir = `set -e
real=$1
mount --bind /var/lib "$real"
mount -t tmpfs -o mode=0755 fusebox-test-var-lib /var/lib
for e in "$real"/* "$real"/.[!.]*; do
	[ -e "$e" ] || [ -L "$e" ] || continue
	n=${e##*/}
	[ "$n" = fusebox ] && continue
	if [ -L "$e" ]; then cp -P "$e" "/var/lib/$n"
	elif [ -d "$e" ]; then mkdir "/var/lib/$n"; mount --bind "$e" "/var/lib/$n"
	else touch "/var/lib/$n"; mount --bind "$e" "/var/lib/$n"
	fi
done`

// debHost is the machine, with a mount namespace of the test's: see
// hideStateDir.
type debHost struct {
	t      *testing.T
	holder *exec.Cmd // a process in the namespace, for nsenter
	real   string    // where the namespace sees the machine's /var/lib
}

func newDebHost(t *testing.T) *debHost {
	t.Helper()
	h := &debHost{t: t, real: t.TempDir()}
	h.holder = exec.Command("sleep", "3600")
	h.holder.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // and / made private
	if err := h.holder.Start(); err != nil {
		testenv.Skip(t, "no mount namespace here: %v", err)
	}
	t.Cleanup(func() {
		h.holder.Process.Kill()
		h.holder.Wait()
	})
	if out, err := h.cmd("sh", "-c", hideStateDir, "sh", h.real).CombinedOutput(); err != nil {
		t.Fatalf("hide /var/lib/fusebox in the test's mount namespace: %v\n%s", err, out)
	}
	return h
}

// cmd is argv run as root in the namespace.
func (h *debHost) cmd(argv ...string) *exec.Cmd {
	args := append([]string{"-t", strconv.Itoa(h.holder.Process.Pid), "-m", "--"}, argv...)
	cmd := exec.Command("nsenter", args...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + h.t.TempDir(), "LC_ALL=C"}
	return cmd
}

// as is argv run in the namespace as user, with its groups, as cron or
// systemd would run it (HOME its home), with env besides.
func (h *debHost) as(user string, env []string, argv ...string) *exec.Cmd {
	home := h.sh("getent passwd " + user + " | cut -d: -f6")
	cmd := h.cmd(append([]string{"setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "--"}, argv...)...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "LC_ALL=C"}, env...)
	return cmd
}

// sh runs a shell script as root in the namespace and returns its stdout,
// trimmed; it fails the test when the script fails.
func (h *debHost) sh(script string) string {
	h.t.Helper()
	var stderr bytes.Buffer
	cmd := h.cmd("sh", "-c", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("%s: %v\n%s%s", script, err, out, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// ran is how a command run in the namespace ended.
type ran struct {
	code           int
	stdout, stderr string
}

func (h *debHost) run(cmd *exec.Cmd) ran {
	h.t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		h.t.Fatalf("%s: %v", cmd.Args, err)
	}
	return ran{cmd.ProcessState.ExitCode(), out.String(), errb.String()}
}

// machine is what the package may change on this machine, to compare
// before the install and after the purge: the fusebox user's and group's
// entries, the package's files and record, dpkg's view of it, and the
// namespace's /var/lib/fusebox.
func (h *debHost) machine() string {
	h.t.Helper()
	return h.sh(`for f in passwd group shadow gshadow; do echo "$f: $(grep '^fusebox:' /etc/$f || true)"; done
for p in /usr/bin/fusebox /usr/lib/systemd/system/fusebox.service /etc/fusebox /etc/fusebox/config.yaml /var/lib/dpkg/fusebox.made; do echo "$p: $(ls -ld $p 2>&1 | cut -d' ' -f1)"; done
echo "dpkg: $(dpkg-query -W -f '${db:Status-Status}' fusebox 2>&1)"
echo "state dir:"; ls -laR --time-style=+ /var/lib/fusebox 2>&1 || true`)
}

// install installs deb with dpkg -i, and has it purged when the test ends
// whatever happens, in a fresh namespace: the purge removes only what the
// postinst recorded, and never the machine's own /var/lib/fusebox.
func (h *debHost) install(deb string) ran {
	h.t.Helper()
	h.t.Cleanup(func() {
		if out, _ := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "fusebox").Output(); len(out) == 0 || string(out) == "not-installed" {
			return
		}
		purge := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", hideStateDir+"\ndpkg --purge fusebox", "sh", h.t.TempDir())
		if out, err := purge.CombinedOutput(); err != nil {
			h.t.Errorf("purge the fusebox package this test installed: %v\n%s", err, out)
		}
	})
	return h.run(h.cmd("dpkg", "-i", deb))
}

// systemdStartsTheUnit does to /var/lib/fusebox what systemd does when
// fusebox.service starts (systemd.exec(5), StateDirectory=): a dir not
// owned by User= and Group= is given to them with all it holds, and its
// mode becomes StateDirectoryMode=. systemd is not running here.
func (h *debHost) systemdStartsTheUnit() {
	h.t.Helper()
	unit := h.sh("cat /usr/lib/systemd/system/fusebox.service")
	for _, want := range []string{"User=fusebox\n", "Group=fusebox\n", "StateDirectory=fusebox\n", "StateDirectoryMode=2770\n"} {
		if !strings.Contains(unit, want) {
			h.t.Fatalf("fusebox.service has no %q: the simulation of its start is not what systemd would do", want)
		}
	}
	h.sh(`d=/var/lib/fusebox; mkdir -p $d
[ "$(stat -c %U:%G $d)" = fusebox:fusebox ] || chown -R fusebox:fusebox $d
chmod 2770 $d`)
}

// buildDeb returns this checkout's .deb for the machine's architecture,
// from the shared release build.
func buildDeb(t *testing.T) string {
	t.Helper()
	arch, err := exec.Command("dpkg", "--print-architecture").Output()
	if err != nil {
		testenv.Skip(t, "dpkg --print-architecture: %v", err)
	}
	a := strings.TrimSpace(string(arch))
	if !slices.ContainsFunc(releaseCPUs, func(c releaseCPU) bool { return c.debArch == a }) {
		testenv.Skip(t, "release.sh builds no .deb for %s", a)
	}
	return releaseFile(t, "fusebox_"+releaseVersion+"_"+a+".deb")
}

// needInstallable skips, loudly, a machine where the .deb cannot be
// installed for real, or where a fusebox package is installed already.
func needInstallable(t *testing.T) {
	t.Helper()
	testenv.Heavy(t) // it installs and purges a package on this machine
	if os.Geteuid() != 0 {
		testenv.Skip(t, "installing the .deb needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "nsenter", "unshare", "setpriv", "useradd", "groupadd"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "installing the .deb needs %s: %v", tool, err)
		}
	}
	if out, _ := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", "fusebox").Output(); len(out) > 0 && string(out) != "not-installed" {
		testenv.Skip(t, "a fusebox package is %s on this machine: the test would replace it", out)
	}
	for _, name := range []string{"passwd", "group"} {
		if out, _ := exec.Command("getent", name, "fusebox").Output(); len(out) > 0 {
			testenv.Skip(t, "this machine has a fusebox %s already (%s): the test needs it made by the package", name, bytes.TrimSpace(out))
		}
	}
}

// TestTheDebSharesItsStateDirByDesign installs the .deb for real and uses
// /var/lib/fusebox as its users do: root's cron (root's default state
// dir), the daemon's unit as user fusebox (without FUSEBOX_STATE_DIR, as
// its job units run) and a member of group fusebox, each with no ERROR,
// before and after systemd's StateDirectory= has had its way with the dir.
// Then it purges the package, and the machine is as it was.
func TestTheDebSharesItsStateDirByDesign(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t)
	needInstallable(t)
	deb := buildDeb(t)

	t.Run("on a machine without a state dir", func(t *testing.T) {
		h := newDebHost(t)
		before := h.machine()
		if p := h.install(deb); p.code != 0 {
			t.Fatalf("dpkg -i: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if got := h.sh("stat -c '%U:%G %a' /var/lib/fusebox"); got != "fusebox:fusebox 2770" {
			t.Errorf("/var/lib/fusebox after the install: %s, want fusebox:fusebox 2770 (what the unit's StateDirectory= makes it)", got)
		}
		for _, unit := range []string{"fusebox.service", "fusebox-job@.service"} {
			if p := h.run(h.cmd("systemd-analyze", "verify", "--man=no", "/usr/lib/systemd/system/"+unit)); p.code != 0 || p.stdout+p.stderr != "" {
				t.Errorf("systemd-analyze verify %s: exit %d\n%s%s", unit, p.code, p.stdout, p.stderr)
			}
		}

		if got := h.sh("dpkg-query -W -f '${Conffiles}' fusebox | cut -d' ' -f2"); got != "/etc/fusebox/config.yaml" {
			t.Errorf("dpkg's conffiles of fusebox: %q, want /etc/fusebox/config.yaml", got)
		}
		// What the units run, as they run it, on the shipped config: the
		// daemon starts (it exited 78 without one), and a job says nothing.
		config := []string{"FUSEBOX_CONFIG=/etc/fusebox/config.yaml"}
		if p := h.run(h.as("fusebox", config, "/usr/bin/fusebox", "validate")); p.code != 0 || !strings.Contains(p.stdout, "ok (0 circuits") {
			t.Errorf("fusebox validate as user fusebox: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		d := testenv.StartDaemon(t, h.as("fusebox", config, "/usr/bin/fusebox", "serve", "--listen", "127.0.0.1:0"))
		if code, _, body := d.Get(t, "/api/circuits"); code != 200 {
			t.Errorf("the daemon on the shipped config: GET /api/circuits: %d %s", code, body)
		}
		if logged := d.Stop(t); len(troubleLines(logged)) > 0 {
			t.Errorf("the daemon on the shipped config logged trouble:\n%s", logged)
		}
		if p := h.run(h.as("fusebox", config, "/usr/bin/fusebox", "run", "job", "--", "true")); p.code != 0 || p.stderr != "" {
			t.Errorf("a job as fusebox-job@.service runs it: exit %d, want 0 and nothing said:\n%s", p.code, p.stderr)
		}

		member := "fbm" + strconv.FormatUint(rand.Uint64()%1e8, 36)
		h.sh("useradd --no-create-home --home-dir /nonexistent --shell /bin/sh --groups fusebox " + member)
		t.Cleanup(func() { exec.Command("userdel", member).Run() })
		policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "1h"}
		rootRun := func(args ...string) ran {
			return h.run(h.cmd(append([]string{"/usr/bin/fusebox", "run", "cron-job"}, append(policy, args...)...)...))
		}
		checkQuiet := func(who string, p ran, code int) {
			t.Helper()
			if p.code != code || len(troubleLines(p.stderr)) > 0 {
				t.Errorf("%s: exit %d, want %d with no ERROR:\n%s", who, p.code, code, p.stderr)
			}
		}
		checkQuiet("root's failing run, which trips the circuit", rootRun("--", "false"), 1)
		checkQuiet("root's next run, which skips", rootRun("--", "true"), 75)
		statusAs := func(user string, env ...string) {
			t.Helper()
			p := h.run(h.as(user, env, "/usr/bin/fusebox", "status", "--json", "cron-job"))
			var rows []struct{ Name, State string }
			if err := json.Unmarshal([]byte(p.stdout), &rows); p.code != 0 || err != nil || len(rows) != 1 || rows[0].State != "open" || len(troubleLines(p.stderr)) > 0 {
				t.Errorf("%s: status: exit %d, %s (%v); want cron-job open, which root tripped, with no ERROR:\n%s", user, p.code, p.stdout, err, p.stderr)
			}
		}
		statusAs("fusebox") // its default state dir, without FUSEBOX_STATE_DIR
		statusAs(member, "FUSEBOX_STATE_DIR=/var/lib/fusebox")

		h.systemdStartsTheUnit()
		p := h.run(h.as("fusebox", nil, "/usr/bin/fusebox", "run", "daemon-side", "--", "true"))
		checkQuiet("user fusebox's run after the unit started", p, 0)
		checkQuiet("root's run after the unit started", rootRun("--", "true"), 75)
		statusAs("fusebox")
		statusAs(member, "FUSEBOX_STATE_DIR=/var/lib/fusebox")
		if got := h.sh("ls -A /var/lib/fusebox"); strings.Contains(got, ".local") || strings.Contains(got, "corrupt") {
			t.Errorf("/var/lib/fusebox holds %q: a second store, or something moved aside", got)
		}

		h.sh("userdel " + member)
		if p := h.run(h.cmd("dpkg", "--purge", "fusebox")); p.code != 0 {
			t.Fatalf("dpkg --purge: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if after := h.machine(); after != before {
			t.Errorf("after the purge the machine is\n%s\nwant it as it was:\n%s", after, before)
		}
	})

	t.Run("on a machine with a fusebox group of its own", func(t *testing.T) {
		h := newDebHost(t)
		// Its members: one listed in it, one whose own group it is
		// (getent group lists only the first).
		h.sh("groupadd --system fusebox && useradd --system --no-create-home -g fusebox fbown && useradd --system --no-create-home -G fusebox fblisted")
		t.Cleanup(func() {
			exec.Command("userdel", "fbown").Run()
			exec.Command("userdel", "fblisted").Run()
			exec.Command("groupdel", "fusebox").Run()
		})
		before := h.machine()
		p := h.install(deb)
		if p.code != 0 {
			t.Fatalf("dpkg -i: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if !strings.Contains(p.stderr, "fusebox: group fusebox was there before fusebox was installed (gid ") || !strings.Contains(p.stderr, "members: fblisted,fbown): the units run as it, and its members may read and change /var/lib/fusebox") {
			t.Errorf("dpkg -i did not say it took a group that was there, and what its members get:\n%s", p.stderr)
		}
		if got := h.sh("id -gn fusebox"); got != "fusebox" {
			t.Errorf("the fusebox user's group is %q, want the group that was there", got)
		}
		// userdel removes the group of the user's name it is the last of:
		// the purge puts back the one that was there before.
		if p := h.run(h.cmd("dpkg", "--purge", "fusebox")); p.code != 0 {
			t.Fatalf("dpkg --purge: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if after := h.machine(); after != before {
			t.Errorf("after the purge the machine is\n%s\nwant it as it was:\n%s", after, before)
		}
	})

	t.Run("on a machine with a state dir of root's", func(t *testing.T) {
		h := newDebHost(t)
		h.sh("install -d -m 0700 /var/lib/fusebox && echo root-was-here > /var/lib/fusebox/mine")
		before := h.machine()
		p := h.install(deb)
		if p.code != 0 {
			t.Fatalf("dpkg -i: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if !strings.Contains(p.stderr, "/var/lib/fusebox was there before fusebox was installed, not as root's fusebox runs make it: left as it is") ||
			!strings.Contains(p.stderr, "to share it now: fusebox state init --group fusebox /var/lib/fusebox") {
			t.Errorf("dpkg -i did not say it left the state dir alone, and what to do:\n%s", p.stderr)
		}
		if got := h.sh("stat -c '%U:%G %a' /var/lib/fusebox; cat /var/lib/fusebox/mine"); got != "root:root 700\nroot-was-here" {
			t.Errorf("the install took over the dir it did not make: %q", got)
		}
		if p := h.run(h.cmd("/usr/bin/fusebox", "run", "cron-job", "--", "true")); p.code != 0 || len(troubleLines(p.stderr)) > 0 {
			t.Errorf("root's run: exit %d\n%s", p.code, p.stderr)
		}
		if p := h.run(h.cmd("dpkg", "--purge", "fusebox")); p.code != 0 {
			t.Fatalf("dpkg --purge: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if got := h.sh("cat /var/lib/fusebox/mine"); got != "root-was-here" {
			t.Errorf("the purge removed a dir it did not make: %q", got)
		}
		h.sh("rm -rf /var/lib/fusebox/cron-job.json /var/lib/fusebox/.counts /var/lib/fusebox/.locks /var/lib/fusebox/events /var/lib/fusebox/.gc")
		if after := h.machine(); after != before {
			t.Errorf("after the purge the machine is\n%s\nwant it as it was:\n%s", after, before)
		}
	})

	// Root's cron ran fusebox before the package came: its default state
	// dir, /var/lib/fusebox, is root's, 0700, which the group's members
	// cannot use until the daemon's unit first starts.
	t.Run("on a machine where root's fusebox runs made the state dir", func(t *testing.T) {
		h := newDebHost(t)
		policy := []string{"--attempts", "1", "--trip-after", "1", "--open-for", "1h"}
		if p := h.run(h.cmd(append(append([]string{fuseboxBin, "run", "cron-job"}, policy...), "--", "false")...)); p.code != 1 {
			t.Fatalf("root's run before the install: exit %d, want 1:\n%s", p.code, p.stderr)
		}
		if got := h.sh("stat -c '%U:%G %a' /var/lib/fusebox"); got != "root:root 700" {
			t.Fatalf("root's run made /var/lib/fusebox %s, want root:root 700", got)
		}
		before := h.machine()
		p := h.install(deb)
		if p.code != 0 {
			t.Fatalf("dpkg -i: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if !strings.Contains(p.stderr, "fusebox: /var/lib/fusebox, the state of root's earlier fusebox runs, is now shared with group fusebox") {
			t.Errorf("dpkg -i did not say it shared root's state dir:\n%s", p.stderr)
		}
		if got := h.sh("stat -c '%U:%G %a' /var/lib/fusebox"); got != "root:fusebox 2770" {
			t.Errorf("/var/lib/fusebox after the install: %s, want root:fusebox 2770", got)
		}
		member := "fbm" + strconv.FormatUint(rand.Uint64()%1e8, 36)
		h.sh("useradd --no-create-home --home-dir /nonexistent --shell /bin/sh --groups fusebox " + member)
		t.Cleanup(func() { exec.Command("userdel", member).Run() })
		for _, who := range []struct {
			user string
			env  []string
		}{{"fusebox", nil}, {member, []string{"FUSEBOX_STATE_DIR=/var/lib/fusebox"}}} {
			p := h.run(h.as(who.user, who.env, append(append([]string{"/usr/bin/fusebox", "run", "cron-job"}, policy...), "--", "true")...))
			if p.code != 75 || len(troubleLines(p.stderr)) > 0 {
				t.Errorf("%s's run: exit %d, want 75 (the circuit root's run tripped) with no ERROR:\n%s", who.user, p.code, p.stderr)
			}
		}
		h.sh("userdel " + member)
		if p := h.run(h.cmd("dpkg", "--purge", "fusebox")); p.code != 0 {
			t.Fatalf("dpkg --purge: exit %d\n%s%s", p.code, p.stdout, p.stderr)
		}
		if after := h.machine(); after != before {
			t.Errorf("after the purge the machine is\n%s\nwant it as it was:\n%s", after, before)
		}
	})
}
