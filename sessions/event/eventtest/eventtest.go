// Package eventtest holds test data in the event vocabulary that the
// packages which record, compare and report events share. Tests only.
package eventtest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// OK is a read value v.
func OK(v float64) event.Reading { return event.Reading{Value: v} }

// GPU is an NVIDIA H200 row under load as nvidia-smi reads it (fan speed
// [N/A], no PCIe throughput), varied by its index i and the sample's tick:
// the GPUs of the journals, comparisons and reports the tests write.
func GPU(i, tick int) event.GPU {
	return event.GPU{
		Index:            i,
		Name:             event.Text{S: "NVIDIA H200"},
		BusID:            event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)},
		UUID:             event.Text{S: fmt.Sprintf("GPU-3f1c%04d-8a7b-4c2d-9e0f-1a2b3c4d5e6f", i)},
		UtilGPUPct:       OK(float64(95 + (i+tick)%6)),
		UtilMemPct:       OK(float64(55 + (i*3+tick)%15)),
		MemUsedMiB:       OK(131072),
		MemTotalMiB:      OK(143771),
		PowerDrawW:       OK(600 + float64((i*37+tick*13)%3000)/100),
		PowerLimitW:      OK(700),
		TempC:            OK(float64(55 + (i+tick/10)%4)),
		SMClockMHz:       OK(1980),
		MemClockMHz:      OK(3201),
		SMClockMax:       OK(1980),
		FanPct:           event.Reading{Status: event.CellNA, Raw: "[N/A]"},
		PState:           event.Text{S: "P0"},
		PCIeGenCurrent:   OK(5),
		PCIeGenMax:       OK(5),
		PCIeWidthCurrent: OK(16),
		PCIeWidthMax:     OK(16),
		ClockEvents:      event.ClockEvents{Mask: event.ReasonSWPowerCap},
		Persistence:      event.Text{S: "Enabled"},
		ECCMode:          event.Text{S: "Enabled"},
		MIGMode:          event.Text{S: "[N/A]", Status: event.CellNA},
		PCIeRxKBs:        event.Reading{Status: event.CellAbsent}, // nvidia-smi does not read them
		PCIeTxKBs:        event.Reading{Status: event.CellAbsent},
	}
}

// SessionGPU is GPU i (0 or 1) of the reports' test session: an H200
// idle (P0, clocks down, the idle clock-event reason) or under load, GPU 1
// then power-capped (SW power cap) with its power draw [N/A].
func SessionGPU(i int, load bool) event.GPU {
	g := event.GPU{Index: i, Name: event.Text{S: "NVIDIA H200"}, BusID: event.Text{S: []string{"00000000:18:00.0", "00000000:2A:00.0"}[i]},
		UtilGPUPct: OK(0), MemUsedMiB: OK(1), MemTotalMiB: OK(143771), PowerDrawW: OK(75.5), PowerLimitW: OK(700),
		TempC: OK(31), SMClockMHz: OK(345), MemClockMHz: OK(3201), SMClockMax: OK(1980), FanPct: event.Reading{Status: event.CellNotSupported, Raw: "[Not Supported]"},
		PState: event.Text{S: "P0"}, PCIeGenCurrent: OK(5), PCIeGenMax: OK(5), PCIeWidthCurrent: OK(16), PCIeWidthMax: OK(16),
		ClockEvents: event.ClockEvents{Mask: event.ReasonGPUIdle}, Persistence: event.Text{S: "Enabled"}, ECCMode: event.Text{S: "Enabled"},
		MIGMode: event.Text{S: "[N/A]", Status: event.CellNA}}
	if load {
		g.UtilGPUPct, g.MemUsedMiB, g.PowerDrawW, g.TempC, g.SMClockMHz = OK(97), OK(131072), OK(612.25), OK(67), OK(1980)
		g.ClockEvents.Mask = 0
		if i == 1 {
			// GPU 1 power-capped, its power draw unreadable.
			g.SMClockMHz = OK(1755)
			g.ClockEvents.Mask = event.ReasonSWPowerCap
			g.PowerDrawW = event.Reading{Status: event.CellNA, Raw: "[N/A]"}
		}
	}
	return g
}

// SessionGPUs are GPUs 0 and 1 of SessionGPU.
func SessionGPUs(load bool) []event.GPU { return []event.GPU{SessionGPU(0, load), SessionGPU(1, load)} }

// SimGPU draws one simulated H200's readings a sample at a time, as the
// simulator does: under load, utilization 95–100 %, power 600 W ± 20 W
// (two decimals) rising 12 W as the GPU warms, the SM clock at boost
// (1980 MHz) and one sample in 20 capped by power (1965 MHz, SW power
// cap); between runs, the Load's idle values; the temperature drifting
// with the heat. The journals' size benchmarks and the demo's 24 h journal
// are drawn with it.
type SimGPU struct {
	G    event.GPU // the readings; Step changes the varying ones
	Load SimLoad
	heat float64 // 0 (cold) to 1 (warm after about 500 busy samples)
}

// SimLoad is what a SimGPU reads under load and between runs.
type SimLoad struct {
	BusyMemMiB     float64 // memory used under load, MiB
	IdleW          float64 // power between runs, W, ± IdleJitterW
	IdleJitterW    float64
	IdleSMClockMHz float64 // the SM clock between runs (345: clocked down; 1980: held at boost)
	IdleMemMiB     float64 // memory used between runs, MiB; 0 leaves it as under load
}

// Step draws the next sample (busy: under load) from rng and returns it.
func (s *SimGPU) Step(rng *rand.Rand, busy bool) event.GPU {
	g := &s.G
	if busy {
		s.heat = min(1, s.heat+0.002)
		g.UtilGPUPct = OK(float64(95 + rng.IntN(6)))
		g.UtilMemPct = OK(float64(55 + rng.IntN(15)))
		g.PowerDrawW = OK(math.Round((600+s.heat*12+(rng.Float64()*2-1)*20)*100) / 100)
		g.MemUsedMiB = OK(s.Load.BusyMemMiB)
		if rng.IntN(20) == 0 {
			g.SMClockMHz, g.ClockEvents.Mask = OK(1965), event.ReasonSWPowerCap
		} else {
			g.SMClockMHz, g.ClockEvents.Mask = OK(1980), 0
		}
		g.PState = event.Text{S: "P0"}
	} else {
		s.heat = max(0, s.heat-0.004)
		g.UtilGPUPct, g.UtilMemPct = OK(0), OK(0)
		g.PowerDrawW = OK(math.Round((s.Load.IdleW+(rng.Float64()*2-1)*s.Load.IdleJitterW)*100) / 100)
		g.SMClockMHz, g.ClockEvents.Mask = OK(s.Load.IdleSMClockMHz), event.ReasonGPUIdle
		if s.Load.IdleMemMiB > 0 {
			g.MemUsedMiB = OK(s.Load.IdleMemMiB)
		}
	}
	g.TempC = OK(math.Round(30 + float64(g.Index*7%5) + s.heat*27 + (rng.Float64()*2-1)*0.6))
	return *g
}
