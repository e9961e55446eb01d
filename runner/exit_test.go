package runner_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/fusebox-hq/fusebox/runner"
)

func TestExitCodesParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"a list", []string{"1,75"}, "1,75"},
		{"a range", []string{"1-3"}, "1,2,3"},
		{"lists, ranges and spaces mixed", []string{" 1 , 4-5,255"}, "1,4,5,255"},
		{"a repeated flag adds to the list", []string{"1", "75"}, "1,75"},
		{"none set lists none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e runner.ExitCodes
			for _, s := range tc.sets {
				if err := e.Set(s); err != nil {
					t.Fatalf("Set(%q): %v", s, err)
				}
			}
			if got := e.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExitCodesRejectBadInputSayingWhatIsWanted(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"0", `want exit codes 1-255 like 1,2 or 1-3, got "0"`},
		{"256", `want exit codes 1-255 like 1,2 or 1-3, got "256"`},
		{"x", `want exit codes 1-255 like 1,2 or 1-3, got "x"`},
		{"1,,2", `want exit codes 1-255 like 1,2 or 1-3, got ""`},
		{"-3", `want exit codes 1-255 like 1,2 or 1-3, got "-3"`},
		{"3-1", `bad range "3-1"`},
		{"1-256", `bad range "1-256"`},
		{"1-", `bad range "1-"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var e runner.ExitCodes
			err := e.Set(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Set(%q) = %v, want an error saying %s", tc.in, err, tc.want)
			}
		})
	}
}

func TestExitCodesIsAPflagValue(t *testing.T) {
	var e runner.ExitCodes
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.Var(&e, "retry-on-exit", "")
	if err := fs.Parse([]string{"--retry-on-exit", "1-3", "--retry-on-exit", "75"}); err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("retry-on-exit").Value.String(); got != "1,2,3,75" {
		t.Errorf("--retry-on-exit 1-3 --retry-on-exit 75 = %q, want 1,2,3,75", got)
	}
	if e.Type() != "codes" {
		t.Errorf("Type() = %q, want codes (pflag's help shows it)", e.Type())
	}
}
