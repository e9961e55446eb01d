//go:build !race

package testenv

// RaceBuild: this test binary runs under the race detector, so the fusebox
// children BuildFusebox makes do too.
const RaceBuild = false
