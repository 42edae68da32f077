package compare

import (
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// sessionGPU is GPU i of the demo session (package report's test
// session), idle or under load.
func sessionGPU(i int, load bool) event.GPU {
	ok := func(v float64) event.Reading { return event.Reading{Value: v} }
	g := event.GPU{Index: i, Name: event.Text{S: "NVIDIA H200"}, BusID: event.Text{S: []string{"00000000:18:00.0", "00000000:2A:00.0"}[i]},
		UtilGPUPct: ok(0), MemUsedMiB: ok(1), MemTotalMiB: ok(143771), PowerDrawW: ok(75.5), PowerLimitW: ok(700),
		TempC: ok(31), SMClockMHz: ok(345), MemClockMHz: ok(3201), SMClockMax: ok(1980), FanPct: event.Reading{Status: event.CellNotSupported, Raw: "[Not Supported]"},
		PState: event.Text{S: "P0"}, PCIeGenCurrent: ok(5), PCIeGenMax: ok(5), PCIeWidthCurrent: ok(16), PCIeWidthMax: ok(16),
		ClockEvents: event.ClockEvents{Mask: event.ReasonGPUIdle}, Persistence: event.Text{S: "Enabled"}, ECCMode: event.Text{S: "Enabled"},
		MIGMode: event.Text{S: "[N/A]", Status: event.CellNA}}
	if load {
		g.UtilGPUPct, g.MemUsedMiB, g.PowerDrawW, g.TempC, g.SMClockMHz = ok(97), ok(131072), ok(612.25), ok(67), ok(1980)
		g.ClockEvents.Mask = 0
		if i == 1 {
			// GPU 1 power-capped, its power draw unreadable.
			g.SMClockMHz = ok(1755)
			g.ClockEvents.Mask = event.ReasonSWPowerCap
			g.PowerDrawW = event.Reading{Status: event.CellNA, Raw: "[N/A]"}
		}
	}
	return g
}

func sessionGPUs(load bool) []event.GPU { return []event.GPU{sessionGPU(0, load), sessionGPU(1, load)} }

func TestGPUStateSummary(t *testing.T) {
	gs := sessionGPUs(true)
	g2 := sessionGPU(0, true)
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
	lost := sessionGPU(0, true)
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
	na := sessionGPU(0, true)
	na.Index, na.SMClockMHz = 4, event.Reading{Status: event.CellNA, Raw: "[N/A]"}
	if got := GPUStateSummary([]event.GPU{gs[0], na}); !strings.Contains(got, "SM 1980 MHz (GPU 0), [N/A] (GPU 4)") {
		t.Errorf("an [N/A] clock: %q", got)
	}
}
