//go:build linux && cgo

package sim

import "github.com/flightdeck-dev/flightdeck/probes/nvml"

// OpenNVML opens the simulated host's fake NVML in dir: an NVML library
// whose GPUs follow the same model as the fake nvidia-smi (run/gpu-state.json
// and the injected faults), sampled by the real nvml.Sampler.
//
// TODO(issue 8): the fake library; until then NVML is unavailable here.
func OpenNVML(dir string, opts nvml.Options) (*nvml.Sampler, error) {
	return nil, &nvml.UnavailableError{Reason: "the simulated host's fake NVML is not built yet"}
}
