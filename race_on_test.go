//go:build race

package fusebox_test

const raceEnabled = true
