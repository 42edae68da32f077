// Package eventtest holds test data in the event vocabulary that the
// packages which record, compare and report events share. Tests only.
package eventtest

import (
	"fmt"

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
