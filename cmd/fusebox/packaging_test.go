package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestPackagingExampleConfigValidates keeps packaging/examples/config.yaml,
// which the n8n, Node-RED and Home Assistant examples call, a valid config
// that defines what they call and warns of nothing.
func TestPackagingExampleConfigValidates(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("../../packaging/examples/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, b, 0o600)
	os.WriteFile(filepath.Join(dir, "owm_api_key"), []byte("key\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "ha_token"), []byte("token\n"), 0o600)
	p := inproc(t, filepath.Join(dir, "state"), "validate", "--config", cfg)
	if p.Code != 0 || !strings.Contains(p.Stdout, "1 chains") || p.Stderr != "" {
		t.Fatalf("validate: exit %d: %s%s", p.Code, p.Stdout, p.Stderr)
	}
}

// TestSystemdUnitsVerify runs systemd-analyze verify on the units, with
// ExecStart pointing at the fusebox built for the tests, and on the job
// unit's drop-in of docs/schedulers.md.
func TestSystemdUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.Skip(t, "no systemd-analyze (apt-get install systemd): %v", err)
	}
	dir := t.TempDir()
	units := map[string]string{
		"fusebox.service":      "fusebox.service",
		"fusebox-job@.service": "fusebox-job@nas-backup.service",
		"fusebox-job@.timer":   "fusebox-job@nas-backup.timer",
	}
	var args []string
	for src, dst := range units {
		b, err := os.ReadFile(filepath.Join("../../packaging/systemd", src))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "/usr/local/bin/fusebox", fuseboxBin)
		if err := os.WriteFile(filepath.Join(dir, dst), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(dir, dst))
	}
	// The drop-in docs/schedulers.md gives a job that writes to a NAS:
	// systemd-analyze reads it beside the unit, and names any key it
	// does not know.
	dropIn := filepath.Join(dir, "fusebox-job@nas-backup.service.d")
	if err := os.Mkdir(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dropIn, "override.conf"),
		[]byte(doctext.Block(t, "docs/schedulers.md", "ini", "ReadWritePaths=")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"StateDirectory=fusebox", "User=fusebox", "NoNewPrivileges=yes", "ProtectSystem=strict", "ExecReload=/bin/kill -HUP $MAINPID"} {
		if b, _ := os.ReadFile("../../packaging/systemd/fusebox.service"); !strings.Contains(string(b), want) {
			t.Errorf("fusebox.service lacks %s", want)
		}
	}
	cmd := exec.Command(analyze, append([]string{"verify", "--man=no"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
