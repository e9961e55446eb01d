package statestore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a store leaves a goroutine behind after Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
