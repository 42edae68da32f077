//go:build !(linux && cgo)

package agent

import (
	"errors"
	"testing"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
)

// TestOpenSimNVMLWithoutCgo: a build without cgo has no NVML, fake or real,
// and says so as nvml.Open does.
func TestOpenSimNVMLWithoutCgo(t *testing.T) {
	s, err := OpenSimNVML(t.TempDir(), nvml.Options{})
	var ue *nvml.UnavailableError
	if s != nil || !errors.As(err, &ue) || ue.Reason == "" {
		t.Fatalf("OpenSimNVML = %v, %v; want an *nvml.UnavailableError", s, err)
	}
}
