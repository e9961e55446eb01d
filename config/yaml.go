package config

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// yamlDoc is one parsed YAML file and the helpers that read typed values out
// of it, reporting each problem at its line and column under its dotted key.
type yamlDoc struct {
	file    string
	body    ast.Node // nil for an empty document
	anchors map[string][]*ast.AnchorNode
	merged  map[*ast.MappingNode][]entry // entries of mappings worked out
	merging map[*ast.MappingNode]bool    // mappings being worked out
	probs   *problems
}

// entry is one key of a mapping and its value.
type entry struct {
	name  string
	path  string // dotted, from the top of the file
	key   *token.Token
	value ast.Node
}

// maxAliasDepth bounds a chain of aliases.
const maxAliasDepth = 16

// parseYAML parses data, or reports why it cannot and returns nil.
func parseYAML(file string, data []byte, probs *problems) *yamlDoc {
	if _, line := yamlNesting(data, MaxYAMLNesting); line > 0 {
		probs.add(file, &token.Token{Position: &token.Position{Line: line, Column: 1}}, "",
			"%v: collections nested more than %d deep", ErrTooDeep, MaxYAMLNesting)
		return nil
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var yerr interface {
			GetToken() *token.Token
			GetMessage() string
		}
		if errors.As(err, &yerr) {
			probs.add(file, yerr.GetToken(), "", "%s", yerr.GetMessage())
		} else {
			probs.add(file, nil, "", "%v", err)
		}
		return nil
	}
	d := &yamlDoc{file: file, probs: probs}
	if len(f.Docs) > 1 {
		at := f.Docs[1].Start
		if at == nil && f.Docs[1].Body != nil {
			at = f.Docs[1].Body.GetToken()
		}
		probs.add(file, at, "", "only one YAML document is allowed")
	}
	if len(f.Docs) > 0 {
		d.body = f.Docs[0].Body
	}
	return d
}

// errorf reports a problem at n.
func (d *yamlDoc) errorf(n ast.Node, key, format string, args ...any) {
	var tok *token.Token
	if n != nil {
		tok = n.GetToken()
	}
	d.probs.add(d.file, tok, key, format, args...)
}

// resolve follows anchors and aliases to the node they stand for; nil when
// an alias names no earlier anchor (reported).
func (d *yamlDoc) resolve(n ast.Node, key string) ast.Node {
	for range maxAliasDepth {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if n = d.anchor(v); n == nil {
				d.errorf(v, key, "alias *%s names no earlier anchor", v.Value)
				return nil
			}
		default:
			return n
		}
	}
	d.errorf(n, key, "aliases nest too deeply")
	return nil
}

// anchor returns the value of the last anchor named like alias before it.
func (d *yamlDoc) anchor(alias *ast.AliasNode) ast.Node {
	if d.anchors == nil {
		d.anchors = map[string][]*ast.AnchorNode{}
		for _, n := range ast.Filter(ast.AnchorType, d.body) {
			a := n.(*ast.AnchorNode)
			if a.Name != nil {
				name := a.Name.GetToken().Value
				d.anchors[name] = append(d.anchors[name], a)
			}
		}
	}
	if alias.Value == nil {
		return nil
	}
	var found ast.Node
	for _, a := range d.anchors[alias.Value.GetToken().Value] {
		if a.Start.Position.Offset < alias.Start.Position.Offset {
			found = a.Value
		}
	}
	return found
}

// isNull reports whether n is absent or an explicit null.
func isNull(n ast.Node) bool {
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// mapping returns the entries of the mapping n (none for null), with YAML
// merge keys (<<) applied: a key set in the mapping itself wins over a
// merged one, and an earlier merged mapping wins over a later one.
func (d *yamlDoc) mapping(n ast.Node, path string) ([]entry, bool) {
	n = d.resolve(n, path)
	if isNull(n) {
		return nil, true
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.errorf(n, path, "want a mapping of keys to values, got %s", describe(n))
		return nil, false
	}
	entries := d.entries(m, path)
	out := make([]entry, len(entries))
	for i, e := range entries {
		e.path = join(path, e.name)
		out[i] = e
	}
	return out, true
}

// entries returns the entries of m with merges applied, without paths. It
// works each mapping out once, so that aliases cannot make the work grow
// exponentially, and reports a mapping that merges itself.
func (d *yamlDoc) entries(m *ast.MappingNode, path string) []entry {
	if done, ok := d.merged[m]; ok {
		return done
	}
	if d.merged == nil {
		d.merged = map[*ast.MappingNode][]entry{}
		d.merging = map[*ast.MappingNode]bool{}
	}
	d.merging[m] = true
	defer delete(d.merging, m)
	var own, merged []entry
	for _, kv := range m.Values {
		if _, isMerge := kv.Key.(*ast.MergeKeyNode); isMerge {
			merged = append(merged, d.merge(kv.Value, path)...)
			continue
		}
		if name, ok := d.keyName(kv.Key, path); ok {
			own = append(own, entry{name: name, key: kv.Key.GetToken(), value: kv.Value})
		}
	}
	seen := make(map[string]bool, len(own))
	for _, e := range own {
		seen[e.name] = true
	}
	for _, e := range merged {
		if !seen[e.name] {
			seen[e.name] = true
			own = append(own, e)
		}
	}
	d.merged[m] = own
	return own
}

// merge returns the entries the value of a merge key brings in: those of
// one mapping or of a list of them.
func (d *yamlDoc) merge(v ast.Node, path string) []entry {
	items := []ast.Node{v}
	if seq, ok := d.resolve(v, path).(*ast.SequenceNode); ok {
		items = seq.Values
	}
	var all []entry
	for _, item := range items {
		src, ok := d.resolve(item, path).(*ast.MappingNode)
		switch {
		case !ok:
			d.errorf(v, path, "a merge key (<<) needs a mapping or a list of mappings")
		case d.merging[src]:
			d.errorf(v, path, "a merge key (<<) merges a mapping it is part of")
		default:
			all = append(all, d.entries(src, path)...)
		}
	}
	return all
}

// keyName returns the text of a mapping key, which must be a scalar.
func (d *yamlDoc) keyName(k ast.Node, path string) (string, bool) {
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	switch v := d.resolve(k, path).(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	case nil:
		return "", false
	default:
		d.errorf(k, path, "want a plain key, got %s", describe(v))
		return "", false
	}
}

// join appends name to a dotted key path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names what kind of YAML value n is, for error messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.TagNode:
		return "a value tagged " + v.Start.Value
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.StringNode:
		return fmt.Sprintf("%q", v.Value)
	default:
		if tok := v.GetToken(); tok != nil {
			return tok.Value
		}
		return "a value"
	}
}

// scalar returns n resolved when it is a plain scalar (not null, not a
// collection, not tagged), or reports that it is not what want says.
func (d *yamlDoc) scalar(n ast.Node, path, want string) (ast.Node, bool) {
	written := n
	n = d.resolve(n, path)
	switch n.(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.InfinityNode, *ast.NanNode, *ast.LiteralNode:
		return n, true
	case nil:
		if written == nil { // else resolve has reported why
			d.errorf(nil, path, "want %s, got nothing", want)
		}
	case *ast.TagNode:
		if tag := n.GetToken().Value; tag != "!secret" {
			d.errorf(n, path, "unsupported tag %s: only !secret is", tag)
		} else {
			d.errorf(n, path, "want %s; !secret works only in text values", want)
		}
	default:
		d.errorf(n, path, "want %s, got %s", want, describe(n))
	}
	return nil, false
}

// text returns the text of a scalar, for values that are names rather than
// free text: nothing in them is expanded.
func (d *yamlDoc) text(n ast.Node, path, want string) (string, bool) {
	s, ok := d.scalar(n, path, want)
	if !ok {
		return "", false
	}
	return scalarText(s), true
}

func scalarText(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	}
	return n.GetToken().Value
}

// integer returns an int value.
func (d *yamlDoc) integer(n ast.Node, path string) (int, bool) {
	s, ok := d.scalar(n, path, "a whole number")
	if !ok {
		return 0, false
	}
	if v, ok := s.(*ast.IntegerNode); ok {
		if i, ok := int64Of(v); ok && i >= math.MinInt && i <= math.MaxInt {
			return int(i), true
		}
	}
	d.errorf(s, path, "want a whole number, got %s", describe(s))
	return 0, false
}

// int64Of returns the value of an integer node that fits an int64.
func int64Of(n *ast.IntegerNode) (int64, bool) {
	switch v := n.Value.(type) {
	case int64:
		return v, true
	case uint64:
		return int64(v), v <= math.MaxInt64
	}
	return 0, false
}

// number returns a finite float value.
func (d *yamlDoc) number(n ast.Node, path string) (float64, bool) {
	s, ok := d.scalar(n, path, "a number")
	if !ok {
		return 0, false
	}
	switch v := s.(type) {
	case *ast.FloatNode:
		if !math.IsInf(v.Value, 0) && !math.IsNaN(v.Value) {
			return v.Value, true
		}
	case *ast.IntegerNode:
		if i, ok := int64Of(v); ok {
			return float64(i), true
		}
	}
	d.errorf(s, path, "want a number, got %s", describe(s))
	return 0, false
}

// boolean returns a true or false value.
func (d *yamlDoc) boolean(n ast.Node, path string) (bool, bool) {
	s, ok := d.scalar(n, path, "true or false")
	if !ok {
		return false, false
	}
	if v, ok := s.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.errorf(s, path, "want true or false, got %s", describe(s))
	return false, false
}

// duration returns a duration value (see ParseDuration).
func (d *yamlDoc) duration(n ast.Node, path string) (time.Duration, bool) {
	s, ok := d.text(n, path, "a duration like 30s")
	if !ok {
		return 0, false
	}
	v, err := human.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.errorf(n, path, "%v", err)
		return 0, false
	}
	return v, true
}

// list returns the items of a list.
func (d *yamlDoc) list(n ast.Node, path, want string) ([]ast.Node, bool) {
	r := d.resolve(n, path)
	if seq, ok := r.(*ast.SequenceNode); ok {
		return seq.Values, true
	}
	if r != nil || n == nil { // else resolve has reported why
		d.errorf(r, path, "want a list of %s, got %s", want, describe(r))
	}
	return nil, false
}
