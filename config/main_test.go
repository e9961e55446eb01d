package config

import (
	"testing"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// TestMain prints, after the tests, how many skipped and why.
func TestMain(m *testing.M) { testenv.Exit(m.Run()) }
