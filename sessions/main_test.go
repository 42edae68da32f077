package sessions

import (
	"os"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sim"
)

func TestMain(m *testing.M) {
	// The simulated host re-executes this test binary as its nvidia-smi and
	// inference server.
	sim.RunRoleFromEnv()
	if os.Getenv("GORACE") == "" {
		// Every re-executed fake nvidia-smi would otherwise sleep 1 s at exit
		// under the race detector.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}
