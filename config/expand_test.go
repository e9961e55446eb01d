package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := testEnv(
		map[string]string{"KEY": "k1", "EMPTY": "", "DOLLAR": "$X"},
		map[string]string{"/s/tok": "t1\n", "/s/crlf": "t2\r\n", "/s/two": "t3\n\n", "/s/none": "t4"})
	tests := []struct {
		in, want string
		values   []string
		err      string
	}{
		{"plain", "plain", nil, ""},
		{"a=${KEY}&b=${KEY}", "a=k1&b=k1", []string{"k1", "k1"}, ""},
		{"${EMPTY}", "", []string{""}, ""},
		{"${DOLLAR}", "$X", []string{"$X"}, ""}, // values are not expanded again
		{"$$", "$", nil, ""},
		{"$${KEY}", "${KEY}", nil, ""},
		{"$$$", "$$", nil, ""},
		{"5$", "5$", nil, ""},
		{"$x $1 $ $", "$x $1 $ $", nil, ""},
		{"${file:/s/tok}", "t1", []string{"t1"}, ""},
		{"${file:/s/crlf}", "t2", []string{"t2"}, ""},
		{"${file:/s/two}", "t3\n", []string{"t3\n"}, ""},
		{"${file:/s/none}", "t4", []string{"t4"}, ""},
		{"${NOPE}", "", nil, "environment variable NOPE is not set"},
		{"${file:/s/nope}", "", nil, "cannot read /s/nope: file does not exist"},
		{"${}", "", nil, "not a variable name"},
		{"${A-B}", "", nil, "not a variable name"},
		{"${KEY", "", nil, "no closing }"},
		{"${file:}", "", nil, "needs a path"},
	}
	for _, tt := range tests {
		got, values, errs := expand(tt.in, env.Lookup, env.ReadFile)
		if tt.err != "" {
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.err) {
				t.Errorf("expand(%q): errors %v, want one with %q", tt.in, errs, tt.err)
			}
			continue
		}
		if got != tt.want || !slices.Equal(values, tt.values) || errs != nil {
			t.Errorf("expand(%q) = %q, %q, %v; want %q, %q", tt.in, got, values, errs, tt.want, tt.values)
		}
	}
}

func TestExpandReportsEveryBadReference(t *testing.T) {
	_, _, errs := expand("${A}/${B}/${C}", testEnv(map[string]string{"B": "b"}, nil).Lookup, nil)
	if got := fmt.Sprint(errs); len(errs) != 2 || !strings.Contains(got, "A is not set") || !strings.Contains(got, "C is not set") {
		t.Errorf("got %v, want A and C not set", errs)
	}
}
