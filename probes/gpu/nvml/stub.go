//go:build !(linux && cgo)

package nvml

import (
	"context"
	"errors"
	"runtime"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Sampler is NVML opened for sampling. This build has no NVML: Open always
// fails, so no Sampler exists.
type Sampler struct{}

// Open reports why NVML is unavailable in this build: it needs Linux and
// cgo.
func Open(Options) (*Sampler, error) {
	if runtime.GOOS != "linux" {
		return nil, &UnavailableError{Reason: "NVML needs Linux (this is " + runtime.GOOS + ")"}
	}
	return nil, &UnavailableError{Reason: "this build has no cgo (CGO_ENABLED=0)"}
}

// compiled: this build has no NVML.
const compiled = false

var errNoSampler = errors.New("nvml: no sampler in this build")

// Info is the library's description; never called in this build.
func (*Sampler) Info() Info { return Info{} }

// Sample reads every GPU once; never called in this build.
func (*Sampler) Sample() (event.GPUSample, error) { return event.GPUSample{}, errNoSampler }

// Run samples until ctx ends; never called in this build.
func (*Sampler) Run(context.Context, event.Sink) error { return errNoSampler }

// Close releases NVML; never called in this build.
func (*Sampler) Close() error { return nil }
