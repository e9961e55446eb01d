// Command hello is the floor of the whole-process latency benchmark: a static
// Go binary that does nothing but print.
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
