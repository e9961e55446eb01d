package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// expand replaces ${VAR} with lookup(VAR), ${file:PATH} with the contents
// of PATH less one trailing newline, and $$ with $. Any other $ stays as it
// is. It returns the result, the values it put in (to be kept secret), and
// one error for each reference it could not expand.
func expand(s string, lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (string, []string, []error) {
	var (
		b      strings.Builder
		values []string
		errs   []error
	)
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), values, errs
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
			continue
		case '{':
		default:
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs = append(errs, fmt.Errorf("%q has no closing } (write $$ for a literal $)", s[i:min(len(s), i+20)]))
			return b.String(), values, errs
		}
		ref := s[i+2 : i+end]
		s = s[i+end+1:]
		v, err := expandRef(ref, lookup, readFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.WriteString(v)
		values = append(values, v)
	}
}

// expandRef returns the value of what ${ref} names.
func expandRef(ref string, lookup func(string) (string, bool), readFile func(string) ([]byte, error)) (string, error) {
	if path, ok := strings.CutPrefix(ref, "file:"); ok {
		if path == "" {
			return "", errors.New("${file:} needs a path")
		}
		data, err := readFile(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", unavailable{fmt.Errorf("${file:%s}: cannot read %s: %w", path, path, err)}
		}
		v := string(data)
		if cut, ok := strings.CutSuffix(v, "\n"); ok {
			v = strings.TrimSuffix(cut, "\r")
		}
		return v, nil
	}
	if !isVarName(ref) {
		return "", fmt.Errorf("${%s}: not a variable name (want letters, digits and _) nor file:PATH", ref)
	}
	v, ok := lookup(ref)
	if !ok {
		return "", unavailable{fmt.Errorf("${%s}: environment variable %s is not set", ref, ref)}
	}
	return v, nil
}

// unavailable is a reference whose value this process cannot have: an
// environment variable it was not given, a file it cannot read. Unlike a
// reference written wrong, it may be another process's to expand (the
// daemon's unit sets the variable; a shell running fusebox status does not).
type unavailable struct{ error }

func (u unavailable) Unwrap() error { return u.error }

func isVarName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// str returns a text value with ${...} expanded, or the value of a !secret
// tag, and records what was expanded as secret.
func (l *loader) str(n ast.Node, path string) (string, bool) {
	if tag, ok := l.resolve(n, path).(*ast.TagNode); ok && tag.Start.Value == "!secret" {
		v, ok := l.secret(tag, path)
		if ok {
			l.record(v)
		}
		return v, ok
	}
	s, ok := l.text(n, path, "text")
	if !ok {
		return "", false
	}
	if strings.Contains(s, "!secret ") {
		// It would be sent as written: YAML reads a tag only at the start.
		l.errorf(n, path, `!secret works only as the whole value, not inside %q: put the whole value in secrets.yaml (ha_auth: "Bearer xyz") and write !secret ha_auth`, s)
		return "", false
	}
	out, values, errs := expand(s, l.env.Lookup, l.readFile)
	for _, err := range errs {
		if l.scope.spares(l.circuit) && errors.As(err, new(unavailable)) {
			continue // a circuit this command uses no value of
		}
		l.errorf(n, path, "%v", err)
	}
	l.record(values...)
	return out, len(errs) == 0
}

// readFile reads a ${file:...} path, relative to the config's directory.
func (l *loader) readFile(path string) ([]byte, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.dir, path)
	}
	return l.env.ReadFile(path)
}

// record keeps expanded values as secrets of the config and, while an
// endpoint is being read, of the endpoint.
func (l *loader) record(values ...string) {
	for _, v := range values {
		if v == "" {
			continue
		}
		if !l.isSecret[v] {
			l.isSecret[v] = true
			l.secrets = append(l.secrets, v)
		}
		if l.endpoint != nil && !containsString(l.endpoint.Secrets, v) {
			l.endpoint.Secrets = append(l.endpoint.Secrets, v)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// redact hides every secret in a message built from expanded values.
func (l *loader) redact(msg string) string {
	for _, s := range l.secrets {
		msg = strings.ReplaceAll(msg, s, "***")
	}
	return msg
}
