// Package testenv holds what fusebox's tests share about their environment:
// the one harness for running the fusebox binary as a child process (Run
// and Proc, RunWatched, StartDaemon and Daemon, WaitFor), the services they
// talk to (Mosquitto, ServeConns), and what a machine must offer them (Skip,
// MountTmpfs, Group).
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NoSkipVar, when set (CI sets it), turns every Skip into a failure, so a green
// CI means every service and facility the tests need was really exercised.
const NoSkipVar = "FUSEBOX_TEST_NO_SKIP"

// Skip skips the test with a loud message, or fails it when NoSkipVar is set.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(NoSkipVar) != "" {
		t.Fatalf("would skip, but $"+NoSkipVar+" is set: "+format, args...)
	}
	recordSkip(t, fmt.Sprintf(format, args...))
	t.Skipf("SKIP (set up what is missing to run this): "+format, args...)
}

// RunWithFusebox is a TestMain's body for tests that run the fusebox
// binary: it builds it (BuildFusebox), sets *bin to it, runs the tests,
// removes the build, prints the skip summary and returns m.Run's code, or
// 1 when a race-built child reported a data race that no test took.
func RunWithFusebox(m *testing.M, bin *string) int {
	b, cleanup := BuildFusebox()
	defer cleanup()
	*bin = b
	code := m.Run()
	printSkipSummary()
	if races := unclaimedRaces(); races != "" {
		fmt.Fprint(os.Stderr, races)
		code = 1
	}
	return code
}

// BuildFusebox builds the fusebox command with CGO_ENABLED=0, as users get
// it, into a temporary dir, for a TestMain. In a -race test binary it
// builds it with -race instead, and FuseboxCmd has it write its race
// reports where CheckRace finds them. It panics when the build fails (no
// test could run), and returns the binary and a cleanup.
func BuildFusebox() (bin string, cleanup func()) {
	dir, err := os.MkdirTemp("", "fusebox-test-bin-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "fusebox")
	args := []string{"build", "-o", bin}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if RaceBuild {
		args = append(args, "-race")
		env = append(os.Environ(), "CGO_ENABLED=1")
		// A dir of its own, 1777 like /tmp: the tests run the binary as
		// other users too, who cannot enter dir.
		if raceLogs, err = os.MkdirTemp("", "fusebox-test-races-"); err != nil || os.Chmod(raceLogs, 0o1777) != nil {
			panic(fmt.Sprintf("race report dir: %v", err))
		}
		// Children started with the test's own environment report there too.
		os.Setenv("GORACE", strings.TrimPrefix(raceEnv(), "GORACE="))
	}
	build := exec.Command("go", append(args, "github.com/fusebox-hq/fusebox/cmd/fusebox")...)
	build.Env = env
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic("build fusebox: " + err.Error())
	}
	return bin, func() {
		os.RemoveAll(dir)
		if raceLogs != "" {
			os.RemoveAll(raceLogs)
		}
	}
}

// FuseboxCmd returns the command running bin with args in a clean
// environment: state in stateDir, HOME its parent (so no stray user config is
// found), FUSEBOX_CONFIG empty, then env (and GORACE, in a -race run).
func FuseboxCmd(bin, stateDir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Dir(stateDir),
		"FUSEBOX_STATE_DIR=" + stateDir,
		"FUSEBOX_CONFIG=",
	}, env...)
	if raceLogs != "" {
		cmd.Env = append(cmd.Env, raceEnv())
	}
	return cmd
}

// MountTmpfs mounts a tmpfs with opts (as mount -o takes them: "size=1m",
// "ro,size=1m,mode=0700") on dir until the test ends; a machine where that
// is impossible (not root, no CAP_SYS_ADMIN) skips loudly.
func MountTmpfs(t testing.TB, dir, opts string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		Skip(t, "cannot mount a tmpfs (-o %s) here: %v %s", opts, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
}
