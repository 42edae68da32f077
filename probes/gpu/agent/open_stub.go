//go:build !(linux && cgo)

package agent

import "github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"

// OpenSimNVML opens the simulated host's fake NVML in dir. This build has
// no NVML (it needs Linux and cgo), so it always fails with an
// *nvml.UnavailableError, as nvml.Open does.
func OpenSimNVML(dir string, opts nvml.Options) (*nvml.Sampler, error) {
	return nvml.Open(opts)
}
