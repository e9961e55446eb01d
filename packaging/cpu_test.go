//go:build linux

package packaging_test

import (
	"bytes"
	"context"
	"debug/elf"
	"debug/macho"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// A Linux CPU a release binary is for, and how this amd64 machine runs
// code for it: qemu-user with the oldest CPU of the boards each is for.
type releaseCPU struct {
	label   string   // the archive's fusebox-VERSION-LABEL
	debArch string   // the .deb that carries the same binary, if any
	qemu    []string // the emulator and its CPU; nil: this machine
	board   string
}

var releaseCPUs = []releaseCPU{
	{"linux-amd64", "amd64", nil, "a PC"},
	{"linux-armv6", "armhf", []string{"qemu-arm-static", "-cpu", "arm1176"}, "a Pi Zero or 1"},
	{"linux-armv7", "", []string{"qemu-arm-static", "-cpu", "cortex-a7"}, "a Pi 2"},
	{"linux-arm64", "arm64", []string{"qemu-aarch64-static", "-cpu", "cortex-a53"}, "a Pi 3 or Zero 2"},
	{"linux-riscv64", "", []string{"qemu-riscv64-static"}, "a riscv64 board"},
}

// TestEveryReleaseBinaryRunsOnItsCPU builds every release file with
// release.sh and runs each Linux binary, from its archive and from its
// .deb, on the CPU it is for under qemu-user: --version, then a fail-fast
// run that trips its circuit and one that skips (exit 75). The armhf .deb
// must carry the ARMv6 binary: Raspberry Pi OS's armhf runs on the Pi
// Zero and 1, whose ARM1176 the ARMv7 binary dies on (SIGILL), as the
// test checks to know that qemu's CPU model is strict.
func TestEveryReleaseBinaryRunsOnItsCPU(t *testing.T) {
	t.Parallel()
	testenv.Heavy(t)
	if runtime.GOARCH != "amd64" {
		testenv.Skip(t, "the test runs the amd64 binary natively and the others under qemu-user: this is %s", runtime.GOARCH)
	}
	for _, tool := range []string{"qemu-arm-static", "qemu-aarch64-static", "qemu-riscv64-static"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "the test needs %s (apt-get install qemu-user-static): %v", tool, err)
		}
	}
	out := release(t)
	const version = releaseVersion
	archiveBin := func(t *testing.T, label string) string {
		t.Helper()
		name := "fusebox-" + version + "-" + label
		bin, ok := tarFiles(t, filepath.Join(out, name+".tar.gz"))[name+"/fusebox"]
		if !ok {
			t.Fatalf("%s.tar.gz has no fusebox", name)
		}
		p := filepath.Join(t.TempDir(), "fusebox")
		if err := os.WriteFile(p, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range releaseCPUs {
		t.Run(c.label+" archive on "+c.board, func(t *testing.T) {
			checkRunsOn(t, c.qemu, archiveBin(t, c.label), version)
		})
		if c.debArch == "" {
			continue
		}
		t.Run(c.debArch+" .deb on "+c.board, func(t *testing.T) {
			deb := filepath.Join(out, "fusebox_"+version+"_"+c.debArch+".deb")
			if got := dpkgDeb(t, "--field", deb, "Architecture"); got != c.debArch {
				t.Errorf("Architecture: %q, want %q", got, c.debArch)
			}
			root := t.TempDir()
			dpkgDeb(t, "-x", deb, root)
			bin := filepath.Join(root, "usr/bin/fusebox")
			checkRunsOn(t, c.qemu, bin, version)
			fromDeb, err1 := os.ReadFile(bin)
			fromArchive, err2 := os.ReadFile(archiveBin(t, c.label))
			if err := errors.Join(err1, err2); err != nil || !bytes.Equal(fromDeb, fromArchive) {
				t.Errorf("the %s .deb's fusebox is not the %s archive's (%v)", c.debArch, c.label, err)
			}
			if c.debArch != "amd64" { // the release test lints amd64's
				lintian(t, deb)
			}
		})
	}

	t.Run("the ARMv7 binary dies on a Pi Zero: qemu's CPU model is strict", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), emulatorHang)
		defer cancel()
		cmd := exec.CommandContext(ctx, "qemu-arm-static", "-cpu", "arm1176", archiveBin(t, "linux-armv7"), "--version")
		cmd.WaitDelay = time.Second
		b, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("qemu-arm-static hung for %v instead of dying on the first ARMv7 instruction (golang/go#70329)", emulatorHang)
		}
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGILL {
			t.Errorf("the ARMv7 binary under -cpu arm1176: %v, want killed by SIGILL:\n%s", err, b)
		}
	})

	t.Run("the macOS and FreeBSD archives hold binaries for their CPUs", func(t *testing.T) {
		for label, want := range map[string]macho.Cpu{"darwin-arm64": macho.CpuArm64, "darwin-amd64": macho.CpuAmd64} {
			f, err := macho.Open(archiveBin(t, label))
			if err != nil {
				t.Errorf("%s: %v", label, err)
				continue
			}
			if f.Cpu != want || f.Type != macho.TypeExec {
				t.Errorf("%s: a Mach-O %v %v, want an executable for %v", label, f.Type, f.Cpu, want)
			}
			f.Close()
		}
		f, err := elf.Open(archiveBin(t, "freebsd-amd64"))
		if err != nil {
			t.Fatalf("freebsd-amd64: %v", err)
		}
		defer f.Close()
		if f.OSABI != elf.ELFOSABI_FREEBSD || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
			t.Errorf("freebsd-amd64: an ELF %v %v %v, want an executable for FreeBSD x86-64", f.Type, f.OSABI, f.Machine)
		}
	})
}

// checkRunsOn runs bin under qemu (nil: natively): its --version, then
// a run whose command fails, tripping the circuit (--trip-after 1), and
// one that skips, exit 75, in a state dir of its own.
//
// qemu-user sometimes never returns from a Go program (golang/go#67355,
// #70329: the emulator, not the program; a real board is not affected).
// A run still going after emulatorHang is such a hang, not a slow machine
// (each run takes well under a second, a few with both cores saturated),
// so the emulator is killed and the three runs start again in a fresh
// state dir, at most twice; a third hang fails the test.
func checkRunsOn(t *testing.T, qemu []string, bin, version string) {
	t.Helper()
	for try := 1; ; try++ {
		hung := runsOn(t, qemu, bin, version)
		if hung == "" {
			return
		}
		if try == 3 || qemu == nil {
			t.Fatalf("%s hung %d times (not killed until %v): a binary that never returns", hung, try, emulatorHang)
		}
		t.Logf("%s still ran after %v: qemu-user hung (golang/go#70329); starting the three runs again", hung, emulatorHang)
	}
}

// emulatorHang is how long one qemu-user run may take before it is taken
// for hung.
const emulatorHang = 2 * time.Minute

// runsOn is one try of checkRunsOn; it returns the run that hung, if one did.
func runsOn(t *testing.T, qemu []string, bin, version string) (hung string) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	run := func(args ...string) (testenv.Proc, bool) {
		argv := append(append(append([]string{}, qemu...), bin), args...)
		ctx, cancel := context.WithTimeout(context.Background(), emulatorHang)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(state), "FUSEBOX_STATE_DIR=" + state, "FUSEBOX_CONFIG="}
		cmd.WaitDelay = time.Second
		p := testenv.Run(t, cmd)
		return p, ctx.Err() != nil
	}
	name := strings.Join(append(append([]string{}, qemu...), "fusebox"), " ")
	p, timedOut := run("--version")
	if timedOut {
		return name + " --version"
	}
	if p.Code != 0 || p.Stdout != "fusebox "+version+"\n" {
		t.Fatalf("%s --version: exit %d, %q\n%s", name, p.Code, p.Stdout, p.Stderr)
	}
	policy := []string{"run", "cpu-check", "--trip-after", "1", "--open-for", "1h", "--"}
	if p, timedOut = run(append(policy, "false")...); timedOut {
		return name + " run (the failing run)"
	}
	if p.Code != 1 || !strings.Contains(p.Stderr, "circuit opened") {
		t.Errorf("the failing run: exit %d, want 1 and the circuit opened:\n%s", p.Code, p.Stderr)
	}
	if p, timedOut = run(append(policy, "false")...); timedOut {
		return name + " run (the skipped run)"
	}
	if p.Code != 75 {
		t.Errorf("the run after it: exit %d, want 75 (skipped, the circuit open):\n%s", p.Code, p.Stderr)
	}
	return ""
}

// TestPlatformsDocRunsTheTestedCPUs: the qemu-user commands of
// docs/platforms.md are those TestEveryReleaseBinaryRunsOnItsCPU runs,
// each on the line of the release file it names.
func TestPlatformsDocRunsTheTestedCPUs(t *testing.T) {
	doc, err := os.ReadFile("../docs/platforms.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range releaseCPUs {
		if c.qemu == nil {
			continue
		}
		cmd := strings.Join(c.qemu, " ") + " ./fusebox --version"
		if !lineWith(string(doc), cmd, "# "+c.label) {
			t.Errorf("docs/platforms.md has no line %q naming %s", cmd, c.label)
		}
	}
}
