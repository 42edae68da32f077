package agent

import (
	"os"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// OpenNVML opens the agent's sampler: the simulated host's fake NVML
// (OpenSimNVML) when the simulated host's sessions set sim.EnvNVML
// (simulated is then true: the hello says so, and the cockpit's header
// too, so fake GPUs never pass for real ones), else libnvidia-ml.so.1
// (nvml.Open). The error is an *nvml.UnavailableError when NVML cannot be
// used.
func OpenNVML(opts nvml.Options) (s *nvml.Sampler, simulated bool, err error) {
	if dir := os.Getenv(sim.EnvNVML); dir != "" {
		s, err = OpenSimNVML(dir, opts)
		return s, true, err
	}
	s, err = nvml.Open(opts)
	return s, false, err
}
