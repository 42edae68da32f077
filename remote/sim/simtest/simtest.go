// Package simtest is the TestMain set-up shared by every test package that
// starts a simulated host.
package simtest

import (
	"os"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// Setup runs a sim role and exits when this process was started as one
// (the simulated host re-executes the test binary as its nvidia-smi,
// inference server and workers); otherwise it returns. Under the race
// detector it also turns off the 1 s sleep at exit that every re-executed
// role would otherwise pay. Call it first thing in TestMain.
func Setup() {
	sim.RunRoleFromEnv()
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
}
