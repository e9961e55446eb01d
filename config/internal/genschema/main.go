// Command genschema writes the config's JSON Schema (config.JSONSchema) to
// the file it is given: `go generate ./config` writes docs/fusebox.schema.json.
package main

import (
	"fmt"
	"os"

	"github.com/fusebox-hq/fusebox/config"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genschema FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Args[1], config.JSONSchema(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}
