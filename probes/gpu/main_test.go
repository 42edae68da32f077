package gpu

import (
	"os"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sim"
)

// TestMain lets the simulated host's wrappers re-execute this test binary
// as its fake nvidia-smi and inference server.
func TestMain(m *testing.M) {
	sim.RunRoleFromEnv()
	if os.Getenv("GORACE") == "" {
		// Every re-executed fake nvidia-smi would otherwise sleep 1 s at
		// exit under the race detector.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}
