//go:build !(linux && cgo)

package nvml

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// Built without cgo (CGO_ENABLED=0 go test ./probes/nvml/), NVML is
// unavailable and says why; nothing else in the package touches NVML.
func TestOpenWithoutCgo(t *testing.T) {
	if Compiled() {
		t.Fatal("Compiled() is true in a build without cgo")
	}
	s, err := Open(Options{})
	var ue *UnavailableError
	if s != nil || !errors.As(err, &ue) {
		t.Fatalf("Open = %v, %v; want *UnavailableError", s, err)
	}
	want := "cgo"
	if runtime.GOOS != "linux" {
		want = "Linux"
	}
	if !strings.Contains(ue.Reason, want) || ue.Code != 0 {
		t.Errorf("reason %q (code %d), want it to name %s", ue.Reason, ue.Code, want)
	}
	var none *Sampler
	if _, err := none.Sample(); err == nil {
		t.Error("Sample on the stub: no error")
	}
	if err := none.Run(context.Background(), nil); err == nil {
		t.Error("Run on the stub: no error")
	}
}
