package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestRunPublishesTheCircuitStateToMQTT(t *testing.T) {
	addr := testenv.Mosquitto(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	env := writeConfig(t, dir, fmt.Sprintf(`defaults:
  notify:
    mqtt: {broker: 'tcp://%s', instance: test}
circuits:
  bridge: {attempts: 1, trip_after: 1}
`, addr))
	if p := fbEnv(t, state, env, "run", "bridge", "--", "false"); p.Code != 1 || p.Stderr == "" {
		t.Fatalf("run: exit %d", p.Code)
	}
	if got := testenv.Retained(t, addr, "fusebox/bridge/state"); got != "ON" {
		t.Errorf("state after the opening = %q, want ON", got)
	}
	if got := testenv.Retained(t, addr, "homeassistant/binary_sensor/fusebox_test/circuit_bridge/config"); got == "" {
		t.Error("no discovery config")
	}
	fbEnv(t, state, env, "reset", "bridge")
	if got := testenv.Retained(t, addr, "fusebox/bridge/state"); got != "OFF" {
		t.Errorf("state after the reset = %q, want OFF", got)
	}
}
