package gpus

import (
	"fmt"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The readings and the GPU of the cockpit's tests (tui/helpers_test.go).

func ok(v float64) event.Reading { return event.Reading{Value: v, Status: event.CellOK} }

func bad(st event.CellStatus, raw string) event.Reading { return event.Reading{Status: st, Raw: raw} }

func txt(s string) event.Text { return event.Text{S: s, Status: event.CellOK} }

// h200 is a busy, healthy H200 on PCIe Gen5 x16 (the DESIGN.md reference
// host). Values vary a little by index so rows are distinguishable.
func h200(i int) event.GPU {
	return event.GPU{
		Index:            i,
		Name:             txt("NVIDIA H200"),
		BusID:            txt(fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)),
		UtilGPUPct:       ok(97),
		UtilMemPct:       ok(41),
		MemUsedMiB:       ok(123289.6 + float64(i)),
		MemTotalMiB:      ok(144384),
		PowerDrawW:       ok(612 + float64(i)),
		PowerLimitW:      ok(700),
		TempC:            ok(61 + float64(i%3)),
		SMClockMHz:       ok(1980),
		MemClockMHz:      ok(3201),
		SMClockMax:       ok(1980),
		PState:           txt("P0"),
		PCIeGenCurrent:   ok(5),
		PCIeGenMax:       ok(5),
		PCIeWidthCurrent: ok(16),
		PCIeWidthMax:     ok(16),
		ClockEvents:      event.ClockEvents{Status: event.CellOK},
		Persistence:      txt("Enabled"),
		// As the nvidia-smi stream reads it: no PCIe throughput.
		PCIeRxKBs: bad(event.CellAbsent, ""),
		PCIeTxKBs: bad(event.CellAbsent, ""),
	}
}
