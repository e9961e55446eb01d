package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/runner"
)

// Exit statuses. They are an interface: scripts test them, so they never
// change once documented (docs/run.md, "Exit status").
const (
	exitOK          = 0
	exitUnavailable = 69                  // call: every endpoint failed (EX_UNAVAILABLE)
	exitTimeout     = runner.ExitTimeout  // run: the last attempt hit --timeout, as timeout(1)
	exitNotExec     = runner.ExitNotExec  // run: the command cannot be executed
	exitNotFound    = runner.ExitNotFound // run: the command was not found
	exitUsage       = 64                  // bad flags or arguments (EX_USAGE)
	exitOpen        = 75                  // the circuit is open; nothing was run (EX_TEMPFAIL)
	exitConfig      = 78                  // the config is invalid (EX_CONFIG)
	exitInterrupted = 128                 // + the signal number: 129 SIGHUP, 130 SIGINT, 131 SIGQUIT, 141 SIGPIPE, 143 SIGTERM
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// configError is a config that cannot be used: missing, unreadable, invalid.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// skipError is a skip (it matches breaker.ErrOpen) that exits with the
// status --skip-exit or skip_exit chose instead of 75.
type skipError struct {
	code int
	err  error
}

func (e *skipError) Error() string { return e.err.Error() }
func (e *skipError) Unwrap() error { return e.err }

// exitCode is the one place that maps errors to exit statuses. It also says
// whether the error still needs printing (commands that already logged why
// they failed return quietly).
func exitCode(err error) (code int, print bool) {
	var (
		ue  *usageError
		ce  *config.Error
		cfe *configError
		se  *skipError
		ie  *runner.Interrupted
		ae  *runner.ExitError
		cle *httpcall.CallError
	)
	switch {
	case err == nil:
		return exitOK, false
	case errors.As(err, &ie):
		return exitInterrupted + int(ie.Signal), false
	case errors.As(err, &ue):
		return exitUsage, true
	case errors.As(err, &ce), errors.As(err, &cfe):
		return exitConfig, true
	case errors.As(err, &se):
		return se.code, false
	case errors.Is(err, breaker.ErrOpen):
		return exitOpen, false
	case errors.As(err, &ae):
		return ae.Code, false
	case errors.Is(err, httpcall.ErrAllSkipped):
		return exitOpen, false
	case errors.As(err, &cle), errors.Is(err, httpcall.ErrAllFailed):
		return exitUnavailable, false
	case errors.Is(err, context.Canceled):
		return exitInterrupted + 2, false
	case errors.Is(err, syscall.EPIPE):
		return exitInterrupted + int(syscall.SIGPIPE), false // stdout's reader went away, as a shell reports it
	}
	return 1, true
}
