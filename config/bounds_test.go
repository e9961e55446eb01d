package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestDeepNestingIsRefusedBeforeParsing(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
	}{
		{"flow brackets 40,000 deep", "circuits: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n", 1},
		{"flow braces 40,000 deep", "fsync: true\ncircuits: " + strings.Repeat("{a: ", 40000) + "1" + strings.Repeat("}", 40000) + "\n", 2},
		{"block sequences on one line", strings.Repeat("- ", 20000) + "a\n", 1},
		{"block indentation", deepBlock(150), 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("/cfg/config.yaml", []byte(tt.yaml), Env{})
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, err) || !strings.Contains(err.Error(), "nested too deep: collections nested more than 100 deep") {
				t.Fatalf("Parse = %v; want a nesting error", err)
			}
			if ce.Line != tt.line {
				t.Errorf("reported at line %d, want %d: %v", ce.Line, tt.line, err)
			}
		})
	}
}

func TestNestingThatRealConfigsUseIsAccepted(t *testing.T) {
	for _, y := range []string{
		"circuits:\n  a:\n    http:\n      url: 'https://x/[a]{b}#c'\n      headers: {A: \"[[[[\"}\n      expect: {status: [200], jq: '[.[] | {a: [.b]}]'}\n",
		"circuits:\n  a: {http: {url: https://x}}   # [[[[[[ in a comment\n",
		deepBlock(90),
	} {
		if _, line := yamlNesting([]byte(y), MaxYAMLNesting); line != 0 {
			t.Errorf("refused at line %d:\n%s", line, y)
		}
	}
}

// deepBlock is a mapping nested n deep by indentation.
func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "v\n")
	return b.String()
}

func TestOnlyRegularFilesOfBoundedSizeAreRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, MaxFileValue+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := func(t *testing.T, text string) string {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"--config names a FIFO", fifo, "not a regular file (a FIFO)"},
		{"--config names /dev/zero", "/dev/zero", "not a regular file (a device)"},
		{"${file:} names a FIFO", cfg(t, "circuits:\n  a:\n    http:\n      url: https://x/?k=${file:"+fifo+"}\n"), "not a regular file (a FIFO)"},
		{"${file:} names /dev/zero", cfg(t, "circuits:\n  a:\n    http:\n      url: https://x/?k=${file:/dev/zero}\n"), "not a regular file (a device)"},
		{"${file:} names a file over the cap", cfg(t, "circuits:\n  a:\n    http:\n      url: https://x/?k=${file:"+big+"}\n"), "1048577 bytes, more than the 1048576 read"},
		{"secrets.yaml is a FIFO", fifoSecrets(t), "not a regular file (a FIFO)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load = %v; want %q", err, tt.want)
			}
		})
	}
	t.Run("a config over the cap", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, make([]byte, MaxConfigSize+1), 0o600); err != nil {
			t.Fatal(err)
		}
		var tl *TooLargeError
		if _, err := Load(p); !errors.As(err, &tl) {
			t.Fatalf("Load = %v; want a *TooLargeError", err)
		}
	})
}

func fifoSecrets(t *testing.T) string {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "secrets.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte("circuits:\n  a:\n    http:\n      url: https://x\n      headers: {Authorization: !secret token}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
