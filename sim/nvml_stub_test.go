//go:build !(linux && cgo)

package sim

import (
	"errors"
	"testing"

	"github.com/flightdeck-dev/flightdeck/probes/nvml"
)

// TestOpenNVMLWithoutCgo: a build without cgo has no NVML, fake or real,
// and says so as nvml.Open does.
func TestOpenNVMLWithoutCgo(t *testing.T) {
	s, err := OpenNVML(t.TempDir(), nvml.Options{})
	var ue *nvml.UnavailableError
	if s != nil || !errors.As(err, &ue) || ue.Reason == "" {
		t.Fatalf("OpenNVML = %v, %v; want an *nvml.UnavailableError", s, err)
	}
}
