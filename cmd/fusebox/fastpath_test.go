package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fuzzApp is an app whose environment names only the state dir and the
// config given, with nothing printed.
func fuzzApp(state, cfg string) *app {
	a := newApp()
	a.stdin, a.stdout, a.stderr, a.stderrFile = strings.NewReader(""), io.Discard, io.Discard, nil
	vars := map[string]string{"FUSEBOX_STATE_DIR": state, "FUSEBOX_CONFIG": cfg}
	a.getenv = func(k string) string { return vars[k] }
	a.home = filepath.Dir(state)
	return a
}

// cobraRunParse runs the command tree on args with run's RunE replaced by
// one that only splits its arguments, as the real one does first: it
// returns the run command's flags, NAME and COMMAND, and whether run's RunE
// was reached at all, with the tree's error.
func cobraRunParse(a *app, args []string) (flags *pflag.FlagSet, name string, argv []string, reached bool, err error) {
	root := newRootCmd(a)
	i := slices.IndexFunc(root.Commands(), func(c *cobra.Command) bool { return c.Name() == "run" })
	run := root.Commands()[i]
	run.RunE = func(cmd *cobra.Command, cargs []string) error {
		reached = true
		flags = cmd.Flags()
		var serr error
		name, argv, serr = splitRunArgs(cmd.Flags(), cargs)
		return serr
	}
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return flags, name, argv, reached, err
}

// FuzzFastParse: for every argv the fast path decides on (fastParse reports
// true), cobra's parse of the same argv reaches run's RunE without an error,
// with the same NAME, COMMAND, global flags and run flags (every value and
// whether it was set); and where the fast path skips an open circuit, the
// full command exits with the same status.
//
// Arguments are NUL-separated. The full command is run only for a circuit
// forced open in a state dir of the test's, with no --state or --config and
// a command PATH cannot find: whichever path decided wrong, nothing is
// executed and nothing is written outside the test's dirs.
func FuzzFastParse(f *testing.F) {
	dir := f.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("circuits:\n  open:\n    skip_exit: 3\n"), 0o600); err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{"open", "dark"} {
		if code := execute(context.Background(), fuzzApp(state, cfg), []string{"trip", "--new", name}); code != 0 {
			f.Fatalf("trip %s: exit %d", name, code)
		}
	}
	for _, seed := range []string{
		"run\x00open\x00--\x00no-such-cmd",
		"run\x00dark\x00--\x00no-such-cmd",
		"run\x00open\x00no-such-cmd",
		"run\x00--skip-exit\x000\x00open\x00--\x00no-such-cmd",
		"run\x00open\x00--skip-exit=9\x00--\x00no-such-cmd",
		"run\x00-v\x00--attempts\x002\x00open\x00--\x00no-such-cmd\x00-x",
		"run\x00--log-format\x00json\x00-q\x00dark\x00--\x00no-such-cmd",
		"run\x00--retry-on-exit\x001-3,75\x00--stream\x00open\x00--\x00no-such-cmd",
		"run\x00--timeout\x005s\x00--backoff=1s\x00open\x00--attempts\x003\x00--\x00no-such-cmd",
		"run\x00--state\x00/nonexistent\x00x\x00--\x00no-such-cmd",
		"run\x00--config=/nonexistent\x00x\x00--\x00no-such-cmd",
		"run\x00--\x00open\x00no-such-cmd",
		"run\x00open\x00--bogus\x00--\x00no-such-cmd",
		"run\x00open\x00-\x00no-such-cmd",
		"run\x00--help\x00open\x00no-such-cmd",
		"run\x00-vq\x00open\x00--\x00no-such-cmd",
		"--verbose\x00run\x00open\x00--\x00no-such-cmd",
		"run\x00--skip-exit\x00300\x00open\x00--\x00no-such-cmd",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		fast := fuzzApp(state, cfg)
		o, fs, ok := fastParse(fast, slices.Clone(args))
		if !ok {
			return // the full command decides
		}
		full := fuzzApp(state, cfg)
		flags, name, argv, reached, err := cobraRunParse(full, slices.Clone(args))
		if !reached || err != nil {
			t.Fatalf("the fast path took %q as run %s -- %q; the command tree: run reached %v, error %v", args, o.name, o.argv, reached, err)
		}
		if name != o.name || !slices.Equal(argv, o.argv) {
			t.Fatalf("%q: the fast path runs %s -- %q, the command tree %s -- %q", args, o.name, o.argv, name, argv)
		}
		if fast.stateFlag != full.stateFlag || fast.configFlag != full.configFlag || !reflect.DeepEqual(fast.log, full.log) {
			t.Fatalf("%q: global flags differ: fast state %q config %q log %+v; tree state %q config %q log %+v",
				args, fast.stateFlag, fast.configFlag, fast.log, full.stateFlag, full.configFlag, full.log)
		}
		fs.VisitAll(func(fl *pflag.Flag) {
			tf := flags.Lookup(fl.Name)
			if tf == nil {
				t.Fatalf("%q: --%s is the fast path's flag, not run's", args, fl.Name)
			}
			if fl.Value.String() != tf.Value.String() || fl.Changed != tf.Changed {
				t.Fatalf("%q: --%s is %q (set %v) on the fast path, %q (set %v) in the tree",
					args, fl.Name, fl.Value.String(), fl.Changed, tf.Value.String(), tf.Changed)
			}
		})

		if (o.name != "open" && o.name != "dark") || fast.stateFlag != "" || fast.configFlag != "" || !unfound(o.argv[0]) {
			return
		}
		fast = fuzzApp(state, cfg)
		code, ok := fastRun(context.Background(), fast, slices.Clone(args))
		if !ok {
			t.Fatalf("%q: the fast path parsed it, then handed a forced-open circuit to the tree", args)
		}
		if want := execute(context.Background(), fuzzApp(state, cfg), slices.Clone(args)); code != want {
			t.Fatalf("%q on a forced-open circuit: the fast path exits %d, the command tree %d", args, code, want)
		}
	})
}

// unfound says PATH finds no command name (a name without a slash).
func unfound(name string) bool {
	if name == "" || strings.Contains(name, "/") {
		return false
	}
	_, err := exec.LookPath(name)
	return err != nil
}
