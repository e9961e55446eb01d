package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// inproc runs fusebox in-process, as the binary would be run by fb: state in
// stateDir, HOME its parent, no config unless env names one. It goes through
// execute, so it is main without os.Exit.
func inproc(t *testing.T, stateDir string, args ...string) testenv.Proc {
	t.Helper()
	return inprocEnv(t, stateDir, nil, args...)
}

// inprocEnv is inproc with extra environment variables, NAME=VALUE, which
// win over the defaults like fbEnv's.
func inprocEnv(t *testing.T, stateDir string, env []string, args ...string) testenv.Proc {
	t.Helper()
	vars := map[string]string{
		"PATH":              os.Getenv("PATH"),
		"HOME":              filepath.Dir(stateDir),
		"FUSEBOX_STATE_DIR": stateDir,
		"FUSEBOX_CONFIG":    "",
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	var stdout, stderr testenv.Buffer
	a := newApp()
	a.stdin, a.stdout, a.stderr, a.stderrFile = strings.NewReader(""), &stdout, &stderr, nil
	a.getenv = func(k string) string { return vars[k] }
	a.home = vars["HOME"]
	start := time.Now()
	code := execute(context.Background(), a, args)
	return testenv.Proc{Code: code, Stdout: stdout.String(), Stderr: stderr.String(), Took: time.Since(start)}
}
