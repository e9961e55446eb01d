//go:build race

package httpcall

// raceBuild: this binary runs under the race detector, whose runtime
// reserves terabytes of address space and shadows every byte of the heap
// with more: jq's child process is then not address-space limited, and
// may take raceMemory times the resident set.
const raceBuild, raceMemory = true, 4
