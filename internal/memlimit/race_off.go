//go:build !race

package memlimit

const raceBuild = false
