package gpu

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestRealNvidiaSMI runs the Sampler against the real nvidia-smi of this
// machine. It needs a GPU, so it runs only with FLIGHTDECK_REAL_GPU=1
// (scripts/gpu-check.sh sets it on a device machine). It checks what no
// fixture can: that the driver supports our field list, that `-lms` output
// reaches us tick by tick through a pipe (not block-buffered), and that
// every reading of an idle or busy GPU parses (no Invalid cell).
func TestRealNvidiaSMI(t *testing.T) {
	if os.Getenv("FLIGHTDECK_REAL_GPU") == "" {
		t.Skip("set FLIGHTDECK_REAL_GPU=1 on a machine with an NVIDIA GPU")
	}
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		t.Fatal("FLIGHTDECK_REAL_GPU is set but nvidia-smi is not on PATH")
	}
	host := remote.NewLocal()
	defer host.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	res, err := host.Run(ctx, "nvidia-smi --help-query-gpu", nil)
	if err != nil {
		t.Fatalf("--help-query-gpu: %v", err)
	}
	supported, err := ParseHelpQueryGPU(res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := QueryFields(supported)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver supports %d fields; querying %d: %v", len(supported), len(fields), fields)
	if len(fields) < len(DefaultFields())-2 {
		t.Errorf("only %d of our %d fields are supported: %v", len(fields), len(DefaultFields()), fields)
	}

	// The same fields with header and units, as a user would save them, must
	// come out of `flightdeck parse gpu` without a garbled row.
	q, err := remote.Command("nvidia-smi", "--query-gpu="+strings.Join(fields, ","), "--format=csv")
	if err != nil {
		t.Fatal(err)
	}
	csv, err := host.Run(ctx, q, nil)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var parsed bytes.Buffer
	if err := WriteJSONL(&parsed, bytes.NewReader(csv.Stdout), nil); err != nil {
		t.Errorf("parse gpu of the driver's own CSV: %v\n%s", err, csv.Stdout)
	}
	if dir := os.Getenv("FLIGHTDECK_GPU_CHECK_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "help-query-gpu.txt"), res.Stdout, 0o644)
		os.WriteFile(filepath.Join(dir, "query-gpu.csv"), csv.Stdout, 0o644)
		os.WriteFile(filepath.Join(dir, "parsed.jsonl"), parsed.Bytes(), 0o644)
	}

	const interval = 250 * time.Millisecond
	samples := make(chan event.GPUSample, 64)
	var failures []event.GPUFailure
	s := &Sampler{Host: host, Interval: interval}
	go s.Run(ctx, func(e event.Event) {
		switch p := e.Data.(type) {
		case event.GPUSample:
			samples <- p
		case event.GPUFailure:
			failures = append(failures, p)
		case event.GPUStale:
			t.Logf("stale: %+v", p)
		}
	})

	var got []event.GPUSample
	for len(got) < 12 {
		select {
		case smp := <-samples:
			got = append(got, smp)
		case <-ctx.Done():
			t.Fatalf("only %d samples in 60 s (failures: %+v)", len(got), failures)
		}
	}
	cancel()
	// Tick-by-tick delivery: 11 gaps of about one interval. Block-buffered
	// output would deliver bursts (near-zero gaps, then long ones).
	span := got[len(got)-1].At.Sub(got[1].At)
	if span < 8*interval || span > 20*interval {
		t.Errorf("10 ticks took %v, want about %v: -lms output is not arriving per tick", span, 10*interval)
	}
	last := got[len(got)-1]
	if len(last.GPUs) == 0 {
		t.Fatal("no GPU in the sample")
	}
	for _, g := range last.GPUs {
		t.Logf("GPU %d %q bus %s: util %v%% mem %v/%v MiB power %v/%v W temp %v C SM %v MHz mem %v MHz P %s PCIe gen %v/%v x%v/%v events %#x persistence %s ECC %s",
			g.Index, g.Name.S, g.BusID.S, g.UtilGPUPct.Value, g.MemUsedMiB.Value, g.MemTotalMiB.Value, g.PowerDrawW.Value,
			g.PowerLimitW.Value, g.TempC.Value, g.SMClockMHz.Value, g.MemClockMHz.Value, g.PState.S,
			g.PCIeGenCurrent.Value, g.PCIeGenMax.Value, g.PCIeWidthCurrent.Value, g.PCIeWidthMax.Value,
			uint64(g.ClockEvents.Mask), g.Persistence.S, g.ECCMode.S)
		for name, r := range map[string]event.Reading{"util": g.UtilGPUPct, "mem used": g.MemUsedMiB, "mem total": g.MemTotalMiB,
			"power": g.PowerDrawW, "temp": g.TempC, "SM clock": g.SMClockMHz, "PCIe gen": g.PCIeGenCurrent, "PCIe width": g.PCIeWidthCurrent} {
			if r.Status == event.CellInvalid {
				t.Errorf("GPU %d %s: unparsable cell %q", g.Index, name, r.Raw)
			}
		}
		if !g.MemTotalMiB.Valid() || g.MemTotalMiB.Value <= 0 {
			t.Errorf("GPU %d: memory total %+v", g.Index, g.MemTotalMiB)
		}
		if g.Name.Status != event.CellOK || g.BusID.Status != event.CellOK {
			t.Errorf("GPU %d: name %+v bus %+v", g.Index, g.Name, g.BusID)
		}
	}
	if len(failures) > 0 {
		t.Errorf("nvidia-smi failures on a healthy machine: %+v", failures)
	}
}
