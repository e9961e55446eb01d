package command

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"
)

func TestSpoolSpillsToAnUnlinkedTempFilePastItsLimit(t *testing.T) {
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
			s := &spool{limit: 8}
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
				if s.mem.Len() != 0 {
					t.Errorf("%d bytes still held in memory after the spill", s.mem.Len())
				}
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
