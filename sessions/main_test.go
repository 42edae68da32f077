package sessions

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
	"github.com/flightdeck-dev/flightdeck/remote/sim/simtest"
)

// TestMain lets the simulated host re-execute this test binary as its
// nvidia-smi, inference server and workers; and the watch tests run it as
// `flightdeck agent watch` (FLIGHTDECK_HOSTWATCH_CHILD: hostwatch.Run with
// the Options in the last argument) or as a process that only sleeps
// with the command line they want (FLIGHTDECK_TEST_SLEEP).
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("FLIGHTDECK_TEST_SLEEP") == "1":
		time.Sleep(time.Minute)
		os.Exit(0)
	case os.Getenv("FLIGHTDECK_HOSTWATCH_CHILD") == "1":
		var o hostwatch.Options
		if json.Unmarshal([]byte(os.Args[len(os.Args)-1]), &o) != nil || hostwatch.Run(context.Background(), os.Stdout, o) != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	simtest.Setup()
	os.Exit(m.Run())
}
