//go:build !race

package httpcall

const raceBuild, raceMemory = false, 1
