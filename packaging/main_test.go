// Package packaging_test runs the examples of packaging/README.md against a
// real `fusebox serve` built from this checkout, with the config of
// examples/config.yaml pointed at the stand-in APIs of internal/fakeapis:
// the Node-RED flow in a real Node-RED (nodered_test.go), the n8n workflow
// in a real n8n (n8n_test.go), and the exact requests Home Assistant's
// RESTful sensor makes, read the way it reads the answer (callers_test.go).
package packaging_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/fusebox-hq/fusebox/internal/testenv"
)

var fuseboxBin string

func TestMain(m *testing.M) {
	code := testenv.RunWithFusebox(m, &fuseboxBin)
	removeRelease()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
