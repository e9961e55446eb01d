package main

import (
	"strings"
	"testing"
)

func TestMistypedFlagOrCommandSuggestsTheNearest(t *testing.T) {
	state := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string // the first line of stderr, whole
	}{
		{"a letter missing", []string{"run", "nas", "--atempts", "2", "--", "true"}, "fusebox: unknown flag: --atempts (did you mean --attempts?)"},
		{"before NAME", []string{"run", "--atempts", "2", "nas", "--", "true"}, "fusebox: unknown flag: --atempts (did you mean --attempts?)"},
		{"with =value", []string{"run", "nas", "--atempts=2", "--", "true"}, "fusebox: unknown flag: --atempts (did you mean --attempts?)"},
		{"a global flag, on a subcommand", []string{"status", "--stat", state}, "fusebox: unknown flag: --stat (did you mean --state?)"},
		{"one dash for two", []string{"run", "nas", "-attempts", "2", "--", "true"}, `fusebox: unknown shorthand flag: 'a' in -attempts (did you mean --attempts?)`},
		{"nothing near", []string{"run", "nas", "--frobnicate", "--", "true"}, "fusebox: unknown flag: --frobnicate"},
		{"an unknown shorthand", []string{"status", "-x"}, `fusebox: unknown shorthand flag: 'x' in -x`},
		{"a command a letter off", []string{"satus"}, `fusebox: unknown command "satus" (did you mean status?)`},
		{"a command's letters swapped", []string{"hisotry", "nas"}, `fusebox: unknown command "hisotry" (did you mean history?)`},
		{"a subcommand a letter off", []string{"state", "int"}, `fusebox: unknown state command "int" (did you mean init?)`},
		{"no command near", []string{"frobnicate"}, `fusebox: unknown command "frobnicate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := inproc(t, state, tc.args...)
			if p.Code != exitUsage {
				t.Errorf("exit %d, want %d (usage); stderr:\n%s", p.Code, exitUsage, p.Stderr)
			}
			first, _, _ := strings.Cut(p.Stderr, "\n")
			if first != tc.want {
				t.Errorf("stderr's first line\n%q, want\n%q", first, tc.want)
			}
			if strings.Count(p.Stderr, "did you mean") > 1 || strings.Contains(p.Stderr, "Usage:") {
				t.Errorf("want one error line and the --help hint, got:\n%s", p.Stderr)
			}
			if p.Stdout != "" {
				t.Errorf("stdout %q, want nothing: the command must not have run", p.Stdout)
			}
		})
	}
}
