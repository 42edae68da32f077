package experiments

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// A GPU whose handle fails (event.MissingGPU) counts in the "Nx NAME"
// summary and is named lost: under the name an earlier sample read, or,
// never read, in the total only.
func TestGPUSummaryCountsALostGPU(t *testing.T) {
	h200 := func(i int) event.GPU {
		g := event.AbsentGPU(i)
		g.Name = event.Text{S: "NVIDIA H200", Status: event.CellOK}
		g.SMClockMHz = event.Reading{Value: 1980, Status: event.CellOK}
		return g
	}
	var gs []event.GPU
	for i := range 16 {
		gs = append(gs, h200(i))
	}
	named := append([]event.GPU(nil), gs...)
	named[2] = event.MissingGPU(2, &gs[2])
	unnamed := append([]event.GPU(nil), gs...)
	unnamed[2], unnamed[3] = event.MissingGPU(2, nil), event.MissingGPU(3, nil)
	for _, c := range []struct {
		name string
		gs   []event.GPU
		want string
	}{
		{"all well", gs, "16x NVIDIA H200  SM 1980 MHz"},
		{"named", named, "16x NVIDIA H200, GPU 2 lost  SM 1980 MHz"},
		{"never read", unnamed, "16 GPUs: 14x NVIDIA H200, GPU 2-3 lost  SM 1980 MHz"},
		{"all lost", []event.GPU{event.MissingGPU(0, nil)}, "1 GPU: GPU 0 lost"},
	} {
		if got := gpuSummary(c.gs); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.name, got, c.want)
		}
	}
}
