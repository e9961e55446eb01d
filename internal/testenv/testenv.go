// Package testenv holds what fusebox's tests share about their environment.
package testenv

import (
	"os"
	"testing"
)

// NoSkipVar, when set (CI sets it), turns every Skip into a failure, so a green
// CI means every service and facility the tests need was really exercised.
const NoSkipVar = "FUSEBOX_TEST_NO_SKIP"

// Skip skips the test with a loud message, or fails it when NoSkipVar is set.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(NoSkipVar) != "" {
		t.Fatalf("would skip, but $"+NoSkipVar+" is set: "+format, args...)
	}
	t.Skipf("SKIP (set up what is missing to run this): "+format, args...)
}
