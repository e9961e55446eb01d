package config

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// testEnv is an Env over a fixed environment and a fake file system.
func testEnv(vars, files map[string]string) Env {
	return Env{
		Lookup: func(k string) (string, bool) {
			v, ok := vars[k]
			return v, ok
		},
		ReadFile: func(p string) ([]byte, error) {
			if v, ok := files[p]; ok {
				return []byte(v), nil
			}
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		},
	}
}

// yaml trims the leading newline of a raw string literal, so a test's YAML
// starts on line 1.
func yaml(s string) []byte { return []byte(strings.TrimPrefix(s, "\n")) }

// configErrors returns every *Error joined in err, failing the test if any
// joined error is not one.
func configErrors(t testing.TB, err error) []*Error {
	t.Helper()
	var list []*Error
	for _, e := range unjoin(err) {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q (%T) is not a *config.Error", e, e)
		}
		if strings.ContainsAny(ce.Error(), "\r\n") {
			t.Errorf("error is not one line: %q", ce.Error())
		}
		list = append(list, ce)
	}
	return list
}
