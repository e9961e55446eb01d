package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fusebox-hq/fusebox/internal/doctext"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

func TestSchemaFileIsCurrent(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join("..", SchemaPath))
	if err != nil {
		t.Fatalf("%v: run go generate ./config and commit %s", err, SchemaPath)
	}
	if !bytes.Equal(committed, JSONSchema()) {
		t.Errorf("%s is stale (the key table changed): run go generate ./config and commit it", SchemaPath)
	}
}

// compiledSchema is JSONSchema compiled by a JSON Schema library of its
// own, which also checks that it is a valid draft-07 schema.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("fusebox.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("fusebox.schema.json")
})

// checkSchema validates the YAML text data against JSONSchema and returns
// why it does not match; nil when it does. It reads the YAML as the loader
// does (aliases, merge keys), and a !secret NAME as the text NAME, as an
// editor told of the tag reads it. YAML the loader cannot read fails t.
func checkSchema(t testing.TB, data []byte) error {
	t.Helper()
	sch, err := compiledSchema()
	if err != nil {
		t.Fatalf("compile the schema: %v", err)
	}
	probs := &problems{}
	doc := parseYAML("config.yaml", data, probs)
	if doc == nil {
		t.Fatalf("YAML the loader cannot read: %v\n%s", probs.err(), data)
	}
	j, err := json.Marshal(doc.jsonValue(doc.body, ""))
	if err != nil {
		t.Fatalf("YAML as JSON: %v\n%s", err, data)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("read back the JSON: %v", err)
	}
	return sch.Validate(inst)
}

// jsonValue is the value of n as JSON: what an editor's YAML support hands
// a JSON Schema.
func (d *yamlDoc) jsonValue(n ast.Node, path string) any {
	switch v := d.resolve(n, path).(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.MappingNode:
		entries, _ := d.mapping(v, path)
		m := make(map[string]any, len(entries))
		for _, e := range entries {
			m[e.name] = d.jsonValue(e.value, e.path)
		}
		return m
	case *ast.SequenceNode:
		list := make([]any, len(v.Values))
		for i, item := range v.Values {
			list[i] = d.jsonValue(item, path)
		}
		return list
	case *ast.TagNode:
		return d.jsonValue(v.Value, path)
	case *ast.IntegerNode:
		return v.Value
	case *ast.FloatNode:
		return v.Value
	case *ast.BoolNode:
		return v.Value
	default: // strings, blocks of text, .inf and .nan
		return scalarText(v)
	}
}

// repositoryConfigs are the config files of the repository and the YAML
// blocks of README.md and docs/*.md (each one a config, as cmd/fusebox's
// TestDocsConfigsValidate holds).
func repositoryConfigs(t *testing.T) map[string][]byte {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "testdata/reference.yaml", "../packaging/examples/config.yaml")
	configs := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		configs[f] = data
	}
	for _, page := range doctext.Pages(t) {
		for i, b := range doctext.Fenced(t, page, "yaml") {
			configs[page+" yaml block "+strconv.Itoa(i+1)] = []byte(b)
		}
	}
	return configs
}

func TestRepositoryConfigsMatchSchema(t *testing.T) {
	for name, data := range repositoryConfigs(t) {
		if err := checkSchema(t, data); err != nil {
			t.Errorf("%s does not match %s: %v", name, SchemaPath, err)
		}
	}
}

// TestExamplesNameSchema: each example config tells an editor where its
// schema is, on its first line.
func TestExamplesNameSchema(t *testing.T) {
	for _, f := range []string{"../examples/weather.yaml", "../packaging/examples/config.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		rel, err := filepath.Rel(filepath.Dir(f), filepath.Join("..", SchemaPath))
		if err != nil {
			t.Fatal(err)
		}
		if want := "# yaml-language-server: $schema=" + rel; first != want {
			t.Errorf("%s starts %q, want %q", f, first, want)
		}
	}
	// The reference config of docs/config.md names the schema by the URL it
	// gives itself.
	var doc struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	if line := "```yaml\n# yaml-language-server: $schema=" + doc.ID + "\n"; !strings.Contains(doctext.Read(t, "docs/config.md"), line) {
		t.Errorf("no config in docs/config.md starts %q", line)
	}
}

// TestPatternsReadAlikeInECMAScript: editors run the schema's patterns as
// ECMAScript regular expressions (VS Code's YAML extension, in Node.js),
// the test's library as Go's. Each pattern compiles in Node.js, and matches
// a set of probes as Go's does.
func TestPatternsReadAlikeInECMAScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, "Node.js is not installed (apt-get install nodejs): %v", err)
	}
	var doc any
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatal(err)
	}
	patterns := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["pattern"].(string); ok {
				patterns[p] = true
			}
			for _, sub := range v {
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	walk(doc)
	probes := []string{
		"", "0", "2s", " 2s\u00a0", "\t1.5d\n", "-0s", "-0.5ns", "-5s", "+1h30m", "500µs", "1.s", ".5m", "5 minutes",
		"auto", " auto ", "10MiB", "512 KB", "0", "+07", "1.5MiB", "10mb",
		"50%", " 50 %", "0x1p-2%", "1_000%", "1__0%", "-5%", "50",
		"get", "POST", "poſt", "optıons", "FETCH",
		"fusebox", "/fusebox", "fusebox/", "a/#", "nas", "my host", "..", "esp32.garage-door_1",
		"X-Token", "X Token", "a\nb", "z2m/bridge/state", "z2m/+/state", "$SYS/x",
		"5xx", "502", "0502", "99",
	}
	in, err := json.Marshal(map[string]any{"patterns": slices.Sorted(maps.Keys(patterns)), "probes": probes})
	if err != nil {
		t.Fatal(err)
	}
	const script = `
const {patterns, probes} = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify(patterns.map(p => { const re = new RegExp(p, "u"); return probes.map(s => re.test(s)); })));`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v (a pattern ECMAScript cannot compile?)", err)
	}
	var js [][]bool
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatalf("node's answer %q: %v", out, err)
	}
	for i, p := range slices.Sorted(maps.Keys(patterns)) {
		re := regexp.MustCompile(p)
		for j, s := range probes {
			if goMatch := re.MatchString(s); goMatch != js[i][j] {
				t.Errorf("pattern %q on %q: Go %v, ECMAScript %v", p, s, goMatch, js[i][j])
			}
		}
	}
	if len(patterns) < 10 {
		t.Fatalf("found %d patterns in the schema", len(patterns))
	}
}
