package statestore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestMain fails the run if a store leaves a goroutine behind after Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testenv.Exit)) }
