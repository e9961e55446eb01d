package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/runner"
)

// TestExitCodes: every status docs/run.md "Exit status" and fusebox --help
// document, from the errors that produce it, bare and wrapped as the
// commands return them; and whether main still prints the error.
func TestExitCodes(t *testing.T) {
	// exhausted is how runner.Run returns a failed call: Do's error around
	// the last attempt's.
	exhausted := func(err error) error {
		return &fusebox.ExhaustedError{Name: "x", Attempts: 3, Err: err}
	}
	open := &breaker.OpenError{Name: "x", Phase: breaker.Open}
	cfgErr := &config.Error{File: "c.yaml", Line: 5, Col: 5, Key: "circuits.x.open_fro", Msg: "unknown key"}
	for _, tc := range []struct {
		name  string
		err   error
		code  int
		print bool
	}{
		{"success", nil, 0, false},

		{"run: the command's own status", exhausted(&runner.ExitError{Code: 3, Reason: "exit status 3"}), 3, false},
		{"run: the command's own status, bare", &runner.ExitError{Code: 3, Reason: "exit status 3"}, 3, false},
		{"run: a permanent failure keeps the command's status",
			exhausted(&fusebox.Failure{Err: &runner.ExitError{Code: 2, Reason: "exit status 2"}, Permanent: true}), 2, false},
		{"run: killed by a signal", exhausted(&runner.ExitError{Code: 137, Reason: "killed by signal 9 (SIGKILL)"}), 137, false},
		{"run: the last attempt hit --timeout", exhausted(&runner.ExitError{Code: runner.ExitTimeout, Reason: "timeout after 200ms"}), 124, false},
		{"run: cannot be executed", exhausted(&fusebox.Failure{Err: &runner.ExitError{Code: runner.ExitNotExec}, Permanent: true, Neutral: true}), 126, false},
		{"run: not found", exhausted(&fusebox.Failure{Err: &runner.ExitError{Code: runner.ExitNotFound}, Permanent: true, Neutral: true}), 127, false},

		{"usage error", usageErrorf("unknown command %q", "x"), 64, true},
		{"usage error, wrapped", fmt.Errorf("parse: %w", usageErrorf("bad")), 64, true},

		{"call: every endpoint failed", &httpcall.CallError{Name: "weather", Errors: []httpcall.EndpointError{{Name: "owm", Reason: "HTTP 503"}}}, 69, false},
		{"call: every endpoint failed, sentinel", fmt.Errorf("weather: %w", httpcall.ErrAllFailed), 69, false},
		{"call: some skipped, the rest failed", &httpcall.CallError{Name: "weather", Errors: []httpcall.EndpointError{
			{Name: "owm", Skipped: true}, {Name: "met", Reason: "HTTP 500"}}}, 69, false},

		{"the circuit is open", open, 75, false},
		{"the circuit is open, wrapped", fmt.Errorf("run: %w", open), 75, false},
		{"the circuit is open, sentinel", breaker.ErrOpen, 75, false},
		{"the circuit is open, --skip-exit 99", &skipError{code: 99, err: breaker.ErrOpen}, 99, false},
		{"the circuit is open, skip_exit 0", &skipError{code: 0, err: breaker.ErrOpen}, 0, false},
		{"call: every circuit open", &httpcall.CallError{Name: "weather", AllSkipped: true,
			Errors: []httpcall.EndpointError{{Name: "owm", Skipped: true}}}, 75, false},
		{"call: every circuit open, sentinel", fmt.Errorf("weather: %w", httpcall.ErrAllSkipped), 75, false},

		{"config error", cfgErr, 78, true},
		{"config error, joined", errors.Join(cfgErr, &config.Error{File: "c.yaml", Line: 6, Msg: "bad"}), 78, true},
		{"config error from loading", &configError{err: cfgErr}, 78, true},
		{"config missing", &configError{err: errors.New("open c.yaml: no such file or directory")}, 78, true},
		{"config error, wrapped", fmt.Errorf("load: %w", &configError{err: errors.New("unreadable")}), 78, true},

		{"interrupted by SIGINT", &runner.Interrupted{Signal: syscall.SIGINT}, 130, false},
		{"interrupted by SIGTERM", &runner.Interrupted{Signal: syscall.SIGTERM}, 143, false},
		{"interrupted, wrapped", fmt.Errorf("run: %w", &runner.Interrupted{Signal: syscall.SIGTERM}), 143, false},
		{"interrupted beats the command's status", fmt.Errorf("%w", errors.Join(
			&runner.Interrupted{Signal: syscall.SIGINT}, &runner.ExitError{Code: 9})), 130, false},
		{"canceled counts as SIGINT", fmt.Errorf("gc: %w", context.Canceled), 130, false},
		{"interrupted by SIGHUP", &runner.Interrupted{Signal: syscall.SIGHUP}, 129, false},
		{"stdout is a closed pipe", &fs.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}, 141, false},

		{"anything else", errors.New("gc: disk on fire"), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, print := exitCode(tc.err)
			if code != tc.code || print != tc.print {
				t.Errorf("exitCode(%v) = %d, print %v; want %d, print %v", tc.err, code, print, tc.code, tc.print)
			}
		})
	}
}
