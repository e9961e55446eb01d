package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestPackagingExampleConfigValidates keeps packaging/examples/config.yaml,
// which the n8n, Node-RED and Home Assistant examples call, a valid config
// that defines what they call.
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
	if p.code != 0 || !strings.Contains(p.stdout, "1 chains") {
		t.Fatalf("validate: exit %d: %s%s", p.code, p.stdout, p.stderr)
	}
}

func TestPackagingFlowsCallTheDaemon(t *testing.T) {
	var flow []map[string]any
	b, err := os.ReadFile("../../packaging/examples/node-red-flow.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &flow); err != nil {
		t.Fatalf("node-red-flow.json: %v", err)
	}
	ids := map[string]bool{}
	for _, n := range flow {
		ids[n["id"].(string)] = true
	}
	found := false
	for _, n := range flow {
		if n["type"] == "http request" {
			found = n["url"] == "http://127.0.0.1:8417/call/weather" && n["method"] == "GET" && n["ret"] == "obj"
		}
		for _, out := range n["wires"].([]any) {
			for _, id := range out.([]any) {
				if !ids[id.(string)] {
					t.Errorf("node %s is wired to a node the flow lacks: %s", n["id"], id)
				}
			}
		}
	}
	if !found {
		t.Error("the flow has no http request node calling /call/weather")
	}
	var n8n struct {
		Nodes []struct {
			Type       string         `json:"type"`
			Parameters map[string]any `json:"parameters"`
		} `json:"nodes"`
	}
	b, err = os.ReadFile("../../packaging/examples/n8n-node.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &n8n); err != nil || len(n8n.Nodes) != 1 ||
		n8n.Nodes[0].Type != "n8n-nodes-base.httpRequest" || n8n.Nodes[0].Parameters["url"] != "http://127.0.0.1:8417/call/weather" {
		t.Errorf("n8n-node.json: %v %+v", err, n8n)
	}
}

// TestSystemdUnitsVerify runs systemd-analyze verify on the units, with
// ExecStart pointing at the fusebox built for the tests.
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
