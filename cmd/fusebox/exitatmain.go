//go:build fusebox_exitatmain

package main

// Built with -tags fusebox_exitatmain, fusebox exits 0 at the top of main:
// the process with everything the binary loads and initialises, and nothing
// it does. The benchmarks time it as the floor of every fusebox command
// (docs/benchmarks.md, section 2). exitAtMain is a variable, not a
// constant, so the build links, and initialises, what the release does.
func init() { exitAtMain = true }
