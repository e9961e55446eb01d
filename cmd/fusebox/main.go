// Command fusebox runs commands and calls HTTP endpoints with retries, backoff
// and circuit breakers whose state persists across runs. main only wires:
// every command is a constructor plus a run function (the small admin
// commands share admin.go), and exitCode is the one place errors become exit
// statuses.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/internal/memlimit"
)

// The man pages of docs/man come from this command tree (man_test.go).
//go:generate go test -run ^TestManPagesAreCurrent$ -args -update-man

// exitAtMain is set only in the benchmarks' floor build (exitatmain.go).
var exitAtMain bool

func main() {
	if exitAtMain {
		os.Exit(0)
	}
	httpcall.IsolateJQ(memlimit.Child) // when started as jq's memory-limited child, it does not return
	a := newApp()
	a.exits = true
	os.Exit(execute(context.Background(), a, os.Args[1:]))
}

// execute runs the command tree on args and returns the exit status, having
// printed the error on a.stderr when exitCode says it still needs printing.
// It is main without os.Exit, so tests run it in-process.
func execute(ctx context.Context, a *app, args []string) int {
	root := newRootCmd(a, args...)
	root.SetArgs(args)
	return report(a, root.ExecuteContext(ctx))
}

// report returns the exit status of a command's error, having printed it
// on a.stderr when exitCode says it still needs printing.
func report(a *app, err error) int {
	code, print := exitCode(err)
	if print {
		msg := err.Error()
		if a.redactor != nil {
			if code == exitConfig {
				// The config loader hides the values it expanded; here the
				// credential patterns would only garble "!secret NAME".
				msg = a.redactor.Secrets(msg)
			} else {
				msg = a.redactor.String(msg)
			}
		}
		fmt.Fprintf(a.stderr, "fusebox: %s\n", msg)
		if code == exitUsage {
			fmt.Fprintln(a.stderr, "Run 'fusebox --help' for usage.")
		}
	}
	return code
}
