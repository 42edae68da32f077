package compare

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
)

func TestGPUStateSummary(t *testing.T) {
	gs := eventtest.SessionGPUs(true)
	g2 := eventtest.SessionGPU(0, true)
	g2.Index = 2
	g2.PCIeGenCurrent.Value, g2.PCIeWidthCurrent.Value = 4, 8
	gs = append(gs, g2)
	got := GPUStateSummary(gs)
	want := "3x NVIDIA H200: SM 1755-1980 MHz, mem 3201 MHz, P0, PCIe Gen5 x16 (GPU 0-1), Gen4 x8 (GPU 2), throttle none (GPU 0,2), sw-power (GPU 1), persistence Enabled, ECC Enabled"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if GPUStateSummary(nil) != "" {
		t.Error("no GPUs: want empty")
	}
	// A lost GPU is named once, not in every field with units after its
	// token.
	lost := eventtest.SessionGPU(0, true)
	lost.Index, lost.Lost = 3, true
	lost.SMClockMHz = event.Reading{Status: event.CellLost, Raw: "[GPU is lost]"}
	lost.MemClockMHz, lost.PCIeGenCurrent = lost.SMClockMHz, lost.SMClockMHz
	lost.PState = event.Text{S: "[GPU is lost]", Status: event.CellLost}
	got = GPUStateSummary(append(gs, lost))
	want = "4x NVIDIA H200: SM 1755-1980 MHz, mem 3201 MHz, P0, PCIe Gen5 x16 (GPU 0-1), Gen4 x8 (GPU 2), throttle none (GPU 0,2), sw-power (GPU 1), persistence Enabled, ECC Enabled, GPU 3 lost"
	if got != want {
		t.Errorf("with a lost GPU:\ngot  %s\nwant %s", got, want)
	}
	if got := GPUStateSummary([]event.GPU{lost}); got != "1x GPU, all lost" {
		t.Errorf("all lost: %q", got)
	}
	// A GPU without a clock reading: its token, no unit after it.
	na := eventtest.SessionGPU(0, true)
	na.Index, na.SMClockMHz = 4, event.Reading{Status: event.CellNA, Raw: "[N/A]"}
	if got := GPUStateSummary([]event.GPU{gs[0], na}); !strings.Contains(got, "SM 1980 MHz (GPU 0), [N/A] (GPU 4)") {
		t.Errorf("an [N/A] clock: %q", got)
	}
}
