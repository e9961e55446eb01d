package runner

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpoolSpillsToAnUnlinkedTempFilePastItsMemory(t *testing.T) {
	for _, tc := range []struct {
		name      string
		writes    []string
		wantSpill bool
	}{
		{"output up to the limit stays in memory", []string{"1234", "5678"}, false},
		{"output past the limit spills", []string{"1234", "56789"}, true},
		{"one write past the limit spills", []string{"123456789"}, true},
		{"writes after the spill go to the file", []string{"123456789", "abc", "def"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live bytes.Buffer
			s := &spool{dir: t.TempDir(), mem: 8, live: &live}
			defer s.Close()
			var want bytes.Buffer
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				want.WriteString(w)
			}
			if spilled := s.file != nil; spilled != tc.wantSpill {
				t.Fatalf("spilled = %v, want %v", spilled, tc.wantSpill)
			}
			if s.file != nil {
				if _, err := os.Stat(s.file.Name()); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the temp file %s is still linked (stat: %v): it would be left behind", s.file.Name(), err)
				}
				if s.buf.Len() != 0 {
					t.Errorf("%d bytes still held in memory after the spill", s.buf.Len())
				}
			}
			if live.Len() != 0 {
				t.Errorf("%q passed through, want everything held", live.String())
			}
			var got bytes.Buffer
			if _, err := s.WriteTo(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("WriteTo gave %q, want %q", got.String(), want.String())
			}
		})
	}
}

func TestSpoolPastItsBoundKeepsTheHeadAndTheEndAndSaysWhatWasCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"within the bound all is kept", []string{"line1\n", "line2\n"}, "line1\nline2\n"},
		{"within head and end nothing is cut", []string{"0123456789", "abcd"}, "0123456789abcd"},
		{"past both the middle is cut", []string{"head\nmore\n", "middle\n", "the end\n"},
			"head\nmore\n[fusebox: 11 bytes of the command's stderr cut here; the first 10 and the last 4 are kept]\nend\n"},
		{"a head cut mid-line gets its own line", []string{"0123456789ABCDEFGHIJ"},
			"0123456789\n[fusebox: 6 bytes of the command's stderr cut here; the first 10 and the last 4 are kept]\nGHIJ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 4 bytes of memory: the head spills to the file, as a long stderr does.
			s := &spool{dir: t.TempDir(), mem: 4, head: 10, tail: 4, what: "stderr", live: failingWriter{}}
			defer s.Close()
			for _, w := range tc.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			var got bytes.Buffer
			if _, err := s.WriteTo(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("WriteTo gave %q, want %q", got.String(), tc.want)
			}
		})
	}
}

func TestSpoolThatCannotHoldPassesEverythingThroughOnce(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var live bytes.Buffer
	var trouble []error
	s := &spool{dir: notADir, mem: 8, live: &live, trouble: func(err error) { trouble = append(trouble, err) }}
	defer s.Close()
	writes := []string{"1234", "56789", "abc"}
	for _, w := range writes {
		if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if want := strings.Join(writes, ""); live.String() != want {
		t.Errorf("passed through %q, want %q: what was held first, then the rest, each once", live.String(), want)
	}
	if len(trouble) != 1 {
		t.Errorf("trouble reported %d times (%v), want once", len(trouble), trouble)
	}
	var after bytes.Buffer
	s.WriteTo(&after)
	if after.Len() != 0 {
		t.Errorf("WriteTo after falling back gave %q again", after.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("the spool wrote to live") }
