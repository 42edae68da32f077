package sessions

import (
	"os"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sim/simtest"
)

// TestMain lets the simulated host re-execute this test binary as its
// nvidia-smi, inference server and workers.
func TestMain(m *testing.M) {
	simtest.Setup()
	os.Exit(m.Run())
}
