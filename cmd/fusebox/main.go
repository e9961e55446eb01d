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
)

func main() {
	a := newApp()
	if code, ok := fastSkip(a, os.Args[1:]); ok {
		os.Exit(code)
	}
	root := newRootCmd(a)
	root.SetArgs(os.Args[1:])
	err := root.ExecuteContext(context.Background())
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
		fmt.Fprintf(os.Stderr, "fusebox: %s\n", msg)
		if code == exitUsage {
			fmt.Fprintln(os.Stderr, "Run 'fusebox --help' for usage.")
		}
	}
	os.Exit(code)
}
