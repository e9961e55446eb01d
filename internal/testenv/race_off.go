//go:build !race

package testenv

// RaceBuild: this test binary runs under the race detector, so the fusebox
// children BuildFusebox makes do too.
const RaceBuild = false

// RaceMemory is what a test multiplies a bound on a fusebox child's
// resident memory by: the race runtime shadows the heap, and a race-built
// child takes two to three times a plain one's. The plain run checks the
// bound itself.
const RaceMemory = 1
