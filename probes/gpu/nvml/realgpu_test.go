//go:build linux && cgo

package nvml

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestRealNVMLMatchesNvidiaSMI opens the real NVML of this machine and
// compares every field with nvidia-smi's --query-gpu read at the same
// moment (between two NVML reads), then measures what each way of
// sampling costs. It needs a GPU, so it runs only with
// FLIGHTDECK_REAL_GPU=1 (scripts/gpu-check.sh sets it). Tables go to
// stdout and, when FLIGHTDECK_GPU_CHECK_OUT names a directory, to
// nvml-vs-smi.txt and sampling-cost.txt there.
func TestRealNVMLMatchesNvidiaSMI(t *testing.T) {
	if os.Getenv("FLIGHTDECK_REAL_GPU") == "" {
		t.Skip("set FLIGHTDECK_REAL_GPU=1 on a machine with an NVIDIA GPU")
	}
	smiPath, err := exec.LookPath("nvidia-smi")
	if err != nil {
		t.Fatal("FLIGHTDECK_REAL_GPU is set but nvidia-smi is not on PATH")
	}
	s, err := Open(Options{NoXid: true})
	if err != nil {
		t.Fatalf("NVML: %v", err)
	}
	defer s.Close()
	t.Logf("NVML %+v", s.Info())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	help, err := exec.CommandContext(ctx, smiPath, "--help-query-gpu").Output()
	if err != nil {
		t.Fatalf("--help-query-gpu: %v", err)
	}
	supported, err := gpu.ParseHelpQueryGPU(help)
	if err != nil {
		t.Fatal(err)
	}
	fields, err := gpu.QueryFields(supported)
	if err != nil {
		t.Fatal(err)
	}
	query := []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"}

	before, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, smiPath, query...).Output()
	if err != nil {
		t.Fatalf("nvidia-smi %s: %v", strings.Join(query, " "), err)
	}
	after, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	p, err := gpu.NewParser(fields)
	if err != nil {
		t.Fatal(err)
	}
	var smiRows []event.GPU
	for _, l := range bytes.Split(bytes.TrimSpace(out), []byte{'\n'}) {
		g, err := p.Parse(l)
		if err != nil {
			t.Fatalf("nvidia-smi row: %v", err)
		}
		smiRows = append(smiRows, g)
	}
	if len(smiRows) != len(after.GPUs) {
		t.Errorf("nvidia-smi lists %d GPUs, NVML %d", len(smiRows), len(after.GPUs))
	}

	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "gpu\tfield\tnvidia-smi\tNVML\tresult")
	mismatches := 0
	for _, smi := range smiRows {
		b, a := rowOf(before, smi.Index), rowOf(after, smi.Index)
		if a == nil || b == nil {
			t.Errorf("GPU %d: not in the NVML sample", smi.Index)
			continue
		}
		for _, c := range compareRows(smi, *b, *a) {
			if !c.ok {
				mismatches++
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", smi.Index, c.field, c.smi, c.nvml, c.result())
		}
	}
	tw.Flush()
	fmt.Print(table.String())
	writeCheckOut(t, "nvml-vs-smi.txt", table.Bytes())
	if mismatches > 0 {
		t.Errorf("%d fields of NVML disagree with nvidia-smi (table above)", mismatches)
	}

	cost := measureCost(t, ctx, s, smiPath, query, len(after.GPUs))
	fmt.Print(cost)
	writeCheckOut(t, "sampling-cost.txt", []byte(cost))
}

func rowOf(s event.GPUSample, index int) *event.GPU {
	for i := range s.GPUs {
		if s.GPUs[i].Index == index {
			return &s.GPUs[i]
		}
	}
	return nil
}

func writeCheckOut(t *testing.T, name string, b []byte) {
	if dir := os.Getenv("FLIGHTDECK_GPU_CHECK_OUT"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// fieldCheck is one line of the comparison table.
type fieldCheck struct {
	field, smi, nvml string
	ok, equivalent   bool // equivalent: "[N/A]" against NOT_SUPPORTED
}

func (c fieldCheck) result() string {
	switch {
	case !c.ok:
		return "MISMATCH"
	case c.equivalent:
		return "ok (n/a = not supported)"
	}
	return "ok"
}

// tolerance accepts a moving reading within pct percent or abs units.
type tolerance struct{ pct, abs float64 }

var exact = tolerance{}

func showReading(r event.Reading) string {
	if r.Status == event.CellOK {
		return strconv.FormatFloat(r.Value, 'f', -1, 64)
	}
	return r.Status.String() + " " + r.Raw
}

// compareRows compares nvidia-smi's row with the NVML rows read just
// before and just after it: static fields exactly, moving ones within
// their tolerance of either.
func compareRows(smi, before, after event.GPU) []fieldCheck {
	var out []fieldCheck
	text := func(field string, s, b, a event.Text) {
		c := fieldCheck{field: field, smi: s.S, nvml: a.S}
		for _, n := range []event.Text{b, a} {
			if s.Status == n.Status && s.S == n.S {
				c.ok = true
			} else if sameState(s.Status, n.Status) && s.Status != event.CellOK {
				c.ok, c.equivalent = true, true
			}
		}
		out = append(out, c)
	}
	num := func(field string, s, b, a event.Reading, tol tolerance) {
		c := fieldCheck{field: field, smi: showReading(s), nvml: showReading(a)}
		for _, n := range []event.Reading{b, a} {
			switch {
			case s.Status == event.CellOK && n.Status == event.CellOK:
				d := math.Abs(s.Value - n.Value)
				if d <= tol.abs || d <= tol.pct/100*math.Max(math.Abs(s.Value), math.Abs(n.Value)) {
					c.ok = true
				}
			case s.Status == n.Status:
				c.ok = true
			case sameState(s.Status, n.Status):
				c.ok, c.equivalent = true, true
			}
		}
		out = append(out, c)
	}
	text("name", smi.Name, before.Name, after.Name)
	text("pci.bus_id", smi.BusID, before.BusID, after.BusID)
	text("uuid", smi.UUID, before.UUID, after.UUID)
	num("utilization.gpu", smi.UtilGPUPct, before.UtilGPUPct, after.UtilGPUPct, tolerance{abs: 10})
	num("utilization.memory", smi.UtilMemPct, before.UtilMemPct, after.UtilMemPct, tolerance{abs: 10})
	num("memory.used", smi.MemUsedMiB, before.MemUsedMiB, after.MemUsedMiB, tolerance{pct: 5, abs: 64})
	num("memory.total", smi.MemTotalMiB, before.MemTotalMiB, after.MemTotalMiB, exact)
	num("power.draw", smi.PowerDrawW, before.PowerDrawW, after.PowerDrawW, tolerance{pct: 5, abs: 10})
	num("power.limit", smi.PowerLimitW, before.PowerLimitW, after.PowerLimitW, exact)
	num("temperature.gpu", smi.TempC, before.TempC, after.TempC, tolerance{abs: 2})
	num("clocks.current.sm", smi.SMClockMHz, before.SMClockMHz, after.SMClockMHz, tolerance{pct: 5, abs: 50})
	num("clocks.current.memory", smi.MemClockMHz, before.MemClockMHz, after.MemClockMHz, tolerance{pct: 5, abs: 50})
	num("clocks.max.sm", smi.SMClockMax, before.SMClockMax, after.SMClockMax, exact)
	num("fan.speed", smi.FanPct, before.FanPct, after.FanPct, tolerance{abs: 5})
	text("pstate", smi.PState, before.PState, after.PState)
	num("pcie.link.gen.current", smi.PCIeGenCurrent, before.PCIeGenCurrent, after.PCIeGenCurrent, exact)
	num("pcie.link.gen.max", smi.PCIeGenMax, before.PCIeGenMax, after.PCIeGenMax, exact)
	num("pcie.link.width.current", smi.PCIeWidthCurrent, before.PCIeWidthCurrent, after.PCIeWidthCurrent, exact)
	num("pcie.link.width.max", smi.PCIeWidthMax, before.PCIeWidthMax, after.PCIeWidthMax, exact)
	// The active reasons move with load; the GPU-idle bit most of all.
	mask := func(e event.ClockEvents) event.Reading {
		if e.Status != event.CellOK {
			return event.Reading{Status: e.Status, Raw: e.Raw}
		}
		return event.Reading{Value: float64(e.Mask &^ event.ReasonGPUIdle)}
	}
	num("clocks_event_reasons.active (without idle)", mask(smi.ClockEvents), mask(before.ClockEvents), mask(after.ClockEvents), exact)
	text("persistence_mode", smi.Persistence, before.Persistence, after.Persistence)
	text("ecc.mode.current", smi.ECCMode, before.ECCMode, after.ECCMode)
	text("mig.mode.current", smi.MIGMode, before.MIGMode, after.MIGMode)
	return out
}

// costSamples is how many samples each mode takes.
const costSamples = 20

// cpuTimes returns user+system CPU time of this process and of its
// waited-for children.
func cpuTimes(t *testing.T) (self, children time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return self, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCost samples costSamples times in each of three ways, 250 ms
// apart, and returns a table of CPU time and processes spawned per
// sample.
func measureCost(t *testing.T, ctx context.Context, s *Sampler, smi string, query []string, gpus int) string {
	const interval = 250 * time.Millisecond
	type result struct {
		mode           string
		self, children time.Duration
		procs          int
		wall           time.Duration
	}
	var rows []result

	// 1. nvidia-smi started once per tick.
	start := time.Now()
	s0, c0 := cpuTimes(t)
	for i := 0; i < costSamples; i++ {
		if err := exec.CommandContext(ctx, smi, query...).Run(); err != nil {
			t.Fatalf("nvidia-smi: %v", err)
		}
		time.Sleep(interval)
	}
	s1, c1 := cpuTimes(t)
	rows = append(rows, result{"nvidia-smi per tick", s1 - s0, c1 - c0, costSamples, time.Since(start)})

	// 2. One nvidia-smi -lms loop for the whole run.
	start = time.Now()
	s0, _ = cpuTimes(t)
	loop := exec.CommandContext(ctx, smi, append(query, "-lms", strconv.Itoa(int(interval.Milliseconds())))...)
	stdout, err := loop.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for lines := 0; lines < costSamples*gpus && sc.Scan(); lines++ {
	}
	loop.Process.Kill()
	io.Copy(io.Discard, stdout)
	loop.Wait()
	var loopChild time.Duration
	if ps := loop.ProcessState; ps != nil {
		loopChild = ps.UserTime() + ps.SystemTime()
	}
	s1, _ = cpuTimes(t)
	rows = append(rows, result{"nvidia-smi -lms loop", s1 - s0, loopChild, 1, time.Since(start)})

	// 3. NVML in this process.
	start = time.Now()
	s0, c0 = cpuTimes(t)
	for i := 0; i < costSamples; i++ {
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval)
	}
	s1, c1 = cpuTimes(t)
	rows = append(rows, result{"NVML in-process", s1 - s0, c1 - c0, 0, time.Since(start)})

	var b bytes.Buffer
	fmt.Fprintf(&b, "sampling cost: %d samples of %d GPU(s), %v apart\n", costSamples, gpus, interval)
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tCPU/sample (self)\tCPU/sample (children)\tCPU/sample (total)\tprocesses spawned/sample\twall")
	for _, r := range rows {
		n := time.Duration(costSamples)
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%.2f\t%v\n", r.mode, (r.self / n).Round(time.Microsecond),
			(r.children / n).Round(time.Microsecond), ((r.self + r.children) / n).Round(time.Microsecond),
			float64(r.procs)/costSamples, r.wall.Round(time.Millisecond))
	}
	tw.Flush()
	return b.String()
}
