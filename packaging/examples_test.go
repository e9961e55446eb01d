package packaging_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestExampleIDsAreUnique checks that no two nodes or flows of the
// examples share an id: Node-RED refuses to import nodes whose ids its
// flows already hold, so a user importing the http request flow and then
// the node package's example (or the other way round) would be refused.
// The n8n workflow's ids are checked with them: one id space, one rule.
func TestExampleIDsAreUnique(t *testing.T) {
	t.Parallel()
	nodeRED, err := filepath.Glob(nodePackage + "/examples/*.json")
	if err != nil || len(nodeRED) == 0 {
		t.Fatalf("no example flow in %s/examples (%v)", nodePackage, err)
	}
	nodeRED = append(nodeRED, "examples/node-red-flow.json")
	seen := map[string]string{} // id -> the file that has it
	add := func(file, id string) {
		if id == "" {
			t.Errorf("%s: a node without an id", file)
			return
		}
		if other, dup := seen[id]; dup {
			t.Errorf("id %q is in %s and in %s", id, other, file)
		}
		seen[id] = file
	}
	for _, file := range nodeRED {
		var nodes []struct {
			ID string `json:"id"`
		}
		readJSON(t, file, &nodes)
		for _, n := range nodes {
			add(file, n.ID)
		}
	}
	const n8n = "examples/n8n-workflow.json"
	var w struct {
		ID    string `json:"id"`
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	readJSON(t, n8n, &w)
	add(n8n, w.ID)
	for _, n := range w.Nodes {
		add(n8n, n.ID)
	}
	if len(seen) < 10 {
		t.Errorf("only %d ids in the examples: the files changed shape under this test", len(seen))
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
