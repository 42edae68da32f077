//go:build linux && cgo

package nvml

import (
	"context"
	"errors"

	"github.com/flightdeck-dev/flightdeck/event"
	"github.com/flightdeck-dev/flightdeck/probes/gpu"
)

// Sampler is NVML opened for sampling.
//
// TODO(issue 8): the real sampler over go-nvml.
type Sampler struct{}

// Open initialises NVML (libnvidia-ml.so.1).
func Open(Options) (*Sampler, error) {
	return nil, &UnavailableError{Reason: "not built yet"}
}

// Info is the library's description.
func (*Sampler) Info() Info { return Info{} }

// Sample reads every GPU once.
func (*Sampler) Sample() (gpu.Sample, error) { return gpu.Sample{}, errors.New("not built yet") }

// Run samples until ctx ends.
func (*Sampler) Run(context.Context, event.Sink) error { return errors.New("not built yet") }

// Close releases NVML.
func (*Sampler) Close() error { return nil }
