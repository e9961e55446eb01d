package config

import (
	"encoding/json"
	goast "go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fusebox-hq/fusebox"
)

// tableBlocks are the key table's blocks by the name the loader's code
// calls them (table().http).
func tableBlocks() map[string]*block {
	k := table()
	return map[string]*block{
		"top": k.top, "history": k.history, "topMQTT": k.topMQTT, "policy": k.policy,
		"retryBudget": k.retryBudget, "failureRate": k.failureRate, "defaults": k.defaults,
		"circuit": k.circuit, "circuitHealth": k.circuitHealth, "watch": k.watch, "chain": k.chain,
		"http": k.http, "expect": k.expect, "httpHealth": k.httpHealth, "notify": k.notify,
		"webhook": k.webhook, "heartbeat": k.heartbeat, "notifyMQTT": k.notifyMQTT,
	}
}

// TestLoaderReadsOnlyTableKeys reads the loader's source: every switch on a
// key's name (switch f.name) must be one whose default reports the key as
// unknown against a block of the table, and every key it reads must be in
// that block. So a key added to the loader alone fails here, naming the
// block to add it to.
func TestLoaderReadsOnlyTableKeys(t *testing.T) {
	// Switches that read some keys before the block's own switch, which
	// reports the rest as unknown.
	byFunc := map[string]*block{"policyKey": table().policy, "brokerKey": table().topMQTT}
	// Keys a switch names only to refuse them with a better message.
	refused := map[string][]string{"circuitHealth": {"path", "interval", "expect"}}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[*block]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*goast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			goast.Inspect(fn.Body, func(n goast.Node) bool {
				sw, ok := n.(*goast.SwitchStmt)
				if !ok || !isKeySwitch(sw) {
					return true
				}
				at := fset.Position(sw.Pos())
				b, labels := switchKeys(t, sw)
				if b == nil {
					b = byFunc[fn.Name.Name]
				}
				if b == nil {
					t.Errorf("%s: %s switches on a key's name, but its default is not l.unknownKey(f, table().someBlock.names()...)", at, fn.Name.Name)
					return true
				}
				seen[b] = true
				for _, l := range labels {
					if !slices.Contains(b.names(), l) && !slices.Contains(refused[fn.Name.Name], l) {
						t.Errorf("%s: %s reads key %q, which its block in keytable.go lacks: add it there (with what it is and means), and run go generate ./config", at, fn.Name.Name, l)
					}
				}
				return true
			})
		}
	}
	for name, b := range tableBlocks() {
		if !seen[b] {
			t.Errorf("no switch of the loader reads %s's keys: the loader's shape changed, and this test reads it no more", name)
		}
	}
}

// isKeySwitch reports whether sw switches on a key's name: switch f.name,
// or a switch whose cases compare f.name to a key.
func isKeySwitch(sw *goast.SwitchStmt) bool {
	if sw.Tag != nil {
		return isNameSelector(sw.Tag)
	}
	for _, stmt := range sw.Body.List {
		for _, e := range stmt.(*goast.CaseClause).List {
			if _, ok := nameCompared(e); ok {
				return true
			}
		}
	}
	return false
}

// isNameSelector reports whether e is X.name.
func isNameSelector(e goast.Expr) bool {
	sel, ok := e.(*goast.SelectorExpr)
	return ok && sel.Sel.Name == "name"
}

// nameCompared returns the key of a case f.name == "key".
func nameCompared(e goast.Expr) (*goast.BasicLit, bool) {
	bin, ok := e.(*goast.BinaryExpr)
	if !ok || bin.Op != token.EQL || !isNameSelector(bin.X) {
		return nil, false
	}
	lit, ok := bin.Y.(*goast.BasicLit)
	return lit, ok && lit.Kind == token.STRING
}

// switchKeys returns the block a switch reports unknown keys against (nil
// when its default does not) and the keys its cases name.
func switchKeys(t *testing.T, sw *goast.SwitchStmt) (*block, []string) {
	var b *block
	var labels []string
	for _, stmt := range sw.Body.List {
		cc := stmt.(*goast.CaseClause)
		for _, e := range cc.List {
			lit, ok := e.(*goast.BasicLit)
			if !ok {
				lit, ok = nameCompared(e)
			}
			if ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				labels = append(labels, s)
			}
		}
		if cc.List != nil {
			continue
		}
		goast.Inspect(cc, func(n goast.Node) bool {
			call, ok := n.(*goast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*goast.SelectorExpr); !ok || sel.Sel.Name != "unknownKey" || len(call.Args) != 2 {
				return true
			}
			names, ok := call.Args[1].(*goast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := names.Fun.(*goast.SelectorExpr); ok && sel.Sel.Name == "names" {
				if field, ok := sel.X.(*goast.SelectorExpr); ok {
					if b = tableBlocks()[field.Sel.Name]; b == nil {
						t.Errorf("unknownKey against table().%s: add it to tableBlocks", field.Sel.Name)
					}
				}
			}
			return true
		})
	}
	return b, labels
}

// exampleConfig is a config setting every key of the table to its example,
// each mapping in its long form (scalars: false) or, where a key takes a
// scalar too (retry_budget: 20%), in that.
func exampleConfig(t *testing.T, b *block, path string, scalars bool) map[string]any {
	m := map[string]any{}
	for _, k := range b.keys {
		at := join(path, k.name)
		switch {
		case k.is != nil && k.example == nil:
			t.Errorf("%s has no example in keytable.go", at)
		case k.block != nil && (k.is == nil || !scalars):
			m[k.name] = exampleConfig(t, k.block, at, scalars)
		case k.each != nil:
			entries := map[string]any{}
			for _, name := range k.example.([]string) {
				entries[name] = exampleConfig(t, k.each, join(at, name), scalars)
			}
			m[k.name] = entries
		case k.items != nil:
			m[k.name] = []any{exampleConfig(t, k.items, at+"[0]", scalars)}
		default:
			m[k.name] = k.example
		}
	}
	return m
}

// TestKeyTableExamplesParse: a config that sets every key of the table, to
// its example, is what Parse reads without a problem, and what the schema
// takes. So every key of the table is one the loader reads.
func TestKeyTableExamplesParse(t *testing.T) {
	env := testEnv(map[string]string{"MQTT_PASSWORD": "pw", "NTFY_TOKEN": "tk"}, map[string]string{"ha_token": "t\n"})
	for _, scalars := range []bool{false, true} {
		cfg := exampleConfig(t, table().top, "", scalars)
		for _, c := range cfg["circuits"].(map[string]any) {
			delete(c.(map[string]any), "timeout") // its http: block sets it: set once
		}
		data, err := json.MarshalIndent(cfg, "", "  ") // JSON is YAML
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("config.yaml", data, env); err != nil {
			t.Errorf("the table's examples (scalar forms %v) do not parse:\n%v\n%s", scalars, err, data)
		}
		if err := checkSchema(t, data); err != nil {
			t.Errorf("the table's examples (scalar forms %v) do not match the schema:\n%v", scalars, err)
		}
	}
}

// TestEveryKeyIsDescribed: an editor shows what each key means.
func TestEveryKeyIsDescribed(t *testing.T) {
	for name, b := range tableBlocks() {
		for _, k := range b.keys {
			if k.schema().Description == "" {
				t.Errorf("table().%s: key %s has no doc in keytable.go", name, k.name)
			}
		}
	}
}

// TestJitterEnumIsParseJitter: the jitters the schema offers are those
// fusebox.ParseJitter takes (the other enums are the loader's own lists).
func TestJitterEnumIsParseJitter(t *testing.T) {
	for _, k := range table().policy.keys {
		if k.name != "jitter" {
			continue
		}
		for _, j := range k.is.Enum {
			if _, err := fusebox.ParseJitter(j.(string)); err != nil {
				t.Errorf("the schema offers jitter %q: %v", j, err)
			}
		}
		if len(k.is.Enum) != 4 {
			t.Errorf("the schema offers %d jitters, want the 4 of fusebox.ParseJitter", len(k.is.Enum))
		}
	}
}
