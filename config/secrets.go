package config

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/goccy/go-yaml/ast"
)

// secret returns the value a !secret tag names in secrets.yaml beside the
// config file, reading that file on first use.
func (l *loader) secret(tag *ast.TagNode, path string) (string, bool) {
	name, ok := l.text(tag.Value, path, "a secret name after !secret")
	if !ok || name == "" {
		if ok {
			l.errorf(tag, path, "!secret needs a name")
		}
		return "", false
	}
	if l.secretValues == nil {
		l.secretValues = l.readSecrets(tag, path)
	}
	if l.secretsFailed {
		return "", false
	}
	v, ok := l.secretValues[name]
	if !ok {
		l.errorf(tag, path, "!secret %s: no key %s in %s", name, name, l.secretsPath())
	}
	return v, ok
}

func (l *loader) secretsPath() string { return filepath.Join(l.dir, "secrets.yaml") }

// readSecrets reads secrets.yaml: a mapping of names to text values. A
// problem reading it is reported once, at the first !secret (at).
func (l *loader) readSecrets(at ast.Node, path string) map[string]string {
	values := map[string]string{}
	file := l.secretsPath()
	data, err := l.env.ReadFile(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		l.errorf(at, path, "!secret needs %s: %v", file, err)
		l.secretsFailed = true
		return values
	}
	doc := parseYAML(file, data, l.probs)
	if doc == nil {
		l.secretsFailed = true
		return values
	}
	entries, _ := doc.mapping(doc.body, "")
	for _, e := range entries {
		if v, ok := doc.text(e.value, e.path, "text"); ok {
			values[e.name] = v
		}
	}
	return values
}
