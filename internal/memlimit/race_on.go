//go:build race

package memlimit

// raceBuild: the race detector's runtime reserves terabytes of address
// space, so the child is not address-space limited under it.
const raceBuild = true
