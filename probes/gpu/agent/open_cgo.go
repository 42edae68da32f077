//go:build linux && cgo

package agent

import (
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// OpenSimNVML opens the simulated host's fake NVML in the sim directory
// dir (sim.FakeNVML) and samples it with the real nvml.Sampler, as
// nvml.Open samples libnvidia-ml.so.1: its GPUs follow the same model as
// the fake nvidia-smi (sim.json, run/gpu-state.json, the workers and the
// injected faults), and opts.Now is also the model's clock. A sim
// directory whose sim.json or GPU capture cannot be read gives an
// *nvml.UnavailableError.
func OpenSimNVML(dir string, opts nvml.Options) (*nvml.Sampler, error) {
	lib, err := sim.FakeNVML(dir, opts.Now)
	if err != nil {
		return nil, &nvml.UnavailableError{Reason: "simulated NVML: " + err.Error()}
	}
	return nvml.OpenLibrary(lib, opts)
}
