package packaging_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// podman runs Debian's podman as containers.md says (runc, vfs storage),
// with its storage, run dir and config in a temporary dir of the test's,
// so that no image or layer lands in the host's storage. Networks, whose
// definitions podman keeps in /etc/containers/networks, are removed by
// name when the test ends.
type podman struct {
	dir string
	env []string
	tag string // the image build.sh built for the test
}

// newPodman skips a test that cannot run podman and builds the image with
// packaging/container/build.sh into the test's own storage.
func newPodman(t *testing.T) *podman {
	t.Helper()
	testenv.Heavy(t)
	if os.Geteuid() != 0 {
		testenv.Skip(t, "podman's bridge networks need root")
	}
	for _, tool := range []string{"podman", "runc", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "%s is not installed (apt-get install podman runc)", tool)
		}
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "storage.conf"), fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n",
		filepath.Join(dir, "root"), filepath.Join(dir, "run")))
	// default_ulimits: else runc may fail to set RLIMIT_NPROC here.
	write(t, filepath.Join(dir, "containers.conf"), "[containers]\ndefault_ulimits = []\n[engine]\nruntime = \"runc\"\n")
	p := &podman{dir: dir, tag: "localhost/fusebox:test-" + randTag()}
	p.env = append(os.Environ(), "CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "storage.conf"),
		"CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"))
	build := exec.Command("sh", "packaging/container/build.sh", p.tag)
	build.Dir = ".."
	build.Env = append(p.env, "VERSION=0.0.0-test")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { p.try("rmi", "-f", p.tag) })
	return p
}

func randTag() string { return strconv.FormatUint(rand.Uint64()%1e10, 36) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// try runs podman with args and returns what it printed on stdout (stderr
// is only shown on failure: podman warns there that it has no syslog and
// no systemd to time health checks, which is harmless here).
func (p *podman) try(args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	cmd.Env = p.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("podman %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out), nil
}

func (p *podman) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := p.try(args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// network creates a bridge network, removed when the test ends, and
// returns its gateway: the host's address on it.
func (p *podman) network(t *testing.T, name string) (gateway string) {
	t.Helper()
	p.run(t, "network", "create", name)
	t.Cleanup(func() { p.try("network", "rm", "-f", name) })
	return p.run(t, "network", "inspect", name, "--format", "{{range .Subnets}}{{.Gateway}}{{end}}")
}

// removeContainer removes a container the test made, when it ends.
func (p *podman) removeContainer(t *testing.T, name string) {
	t.Cleanup(func() { p.try("rm", "-f", "-t", "2", name) })
}

// waitServing waits until the daemon in container name logs that it
// serves, and fails the test when the container stops first.
func (p *podman) waitServing(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute) // a backstop for a hung podman, not a timing
	for {
		logs := p.logs(name)
		if strings.Contains(logs, "serving on http://") {
			return
		}
		if state, _ := p.try("inspect", name, "--format", "{{.State.Status}}"); strings.TrimSpace(state) == "exited" {
			t.Fatalf("container %s exited before serving:\n%s", name, logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s not serving after 3 minutes:\n%s", name, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logs returns what container name wrote on stderr, where fusebox logs.
func (p *podman) logs(name string) string {
	cmd := exec.Command("podman", "logs", name)
	cmd.Env = p.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	return stderr.String()
}

// standIn runs the image's fusebox as a client on network: `fusebox call
// --json NAME` with config as its config and the files given mounted
// read-only (host path: container path), as n8n or Node-RED would call the
// daemon, with runArgs given to podman run. It returns the envelope call printed and its exit status.
func (p *podman) standIn(t *testing.T, network string, hosts, runArgs []string, config string, files map[string]string, name string) (string, int) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "client.yaml")
	write(t, cfg, config)
	args := []string{"run", "--rm", "--network", network, "-v", cfg + ":/etc/fusebox/config.yaml:ro"}
	args = append(args, runArgs...)
	for _, h := range hosts {
		args = append(args, "--add-host", h)
	}
	for host, in := range files {
		args = append(args, "-v", host+":"+in+":ro")
	}
	// The client's circuits in a dir of its own: it is a caller, not the daemon.
	args = append(args, p.tag, "--state", "/data/client", "call", "--json", name)
	out, err := p.try(args...)
	if err == nil {
		return strings.TrimSpace(out), 0
	}
	if xe := (*exec.ExitError)(nil); errors.As(err, &xe) {
		return strings.TrimSpace(out), xe.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
