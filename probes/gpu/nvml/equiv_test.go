//go:build linux && cgo

package nvml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// parseFixture parses a testdata CSV capture (a "# source:" line, the
// --query-gpu header with units, one row) with probes/gpu's Parser.
func parseFixture(t *testing.T, name string) event.GPU {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%s: %d CSV lines, want header and one row", name, len(lines))
	}
	p, err := gpu.NewParser(strings.Split(lines[0], ", "))
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Parse([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// smiRet is the NVML return that makes the sampler show what nvidia-smi
// printed for a non-value cell. Drivers 590/595 print "[N/A]" where NVML
// answers NOT_SUPPORTED (fan on SXM, utilisation of a MIG parent, ECC and
// MIG mode on GeForce).
func smiRet(st event.CellStatus) gonvml.Return {
	switch st {
	case event.CellOK:
		return gonvml.SUCCESS
	case event.CellNA, event.CellNotSupported:
		return gonvml.ERROR_NOT_SUPPORTED
	case event.CellLost:
		return gonvml.ERROR_GPU_IS_LOST
	case event.CellUnknownError:
		return gonvml.ERROR_UNKNOWN
	case event.CellDeprecated:
		return gonvml.ERROR_DEPRECATED
	}
	return gonvml.ERROR_INVALID_ARGUMENT
}

// valsFrom converts a parsed nvidia-smi row into the NVML answers (mW,
// bytes, enums) that describe the same GPU.
func valsFrom(t *testing.T, g event.GPU) *gpuVals {
	t.Helper()
	v := &gpuVals{fail: map[string]gonvml.Return{}}
	num := func(method string, r event.Reading, scale float64) uint64 {
		if r.Status != event.CellOK {
			v.fail[method] = smiRet(r.Status)
			return 0
		}
		return uint64(r.Value*scale + 0.5)
	}
	v.util = uint32(num("util", g.UtilGPUPct, 1))
	v.memUtil = uint32(num("util", g.UtilMemPct, 1))
	v.usedB = num("mem", g.MemUsedMiB, mib)
	v.totalB = num("mem", g.MemTotalMiB, mib)
	v.powerMW = uint32(num("power", g.PowerDrawW, 1000))
	v.limitMW = uint32(num("limit", g.PowerLimitW, 1000))
	v.tempC = uint32(num("temp", g.TempC, 1))
	v.smMHz = uint32(num("sm", g.SMClockMHz, 1))
	v.memMHz = uint32(num("memclock", g.MemClockMHz, 1))
	v.smMaxMHz = uint32(num("smmax", g.SMClockMax, 1))
	v.fanPct = uint32(num("fan", g.FanPct, 1))
	v.genCur = int(num("gen", g.PCIeGenCurrent, 1))
	v.genMax = int(num("genmax", g.PCIeGenMax, 1))
	v.widthCur = int(num("width", g.PCIeWidthCurrent, 1))
	v.widthMax = int(num("widthmax", g.PCIeWidthMax, 1))
	if g.ClockEvents.Status != event.CellOK {
		v.fail["reasons"] = smiRet(g.ClockEvents.Status)
	}
	v.reasons = uint64(g.ClockEvents.Mask)
	if g.PState.Status != event.CellOK || !strings.HasPrefix(g.PState.S, "P") {
		t.Fatalf("P-state %+v", g.PState)
	}
	for i, n := range pstateNames {
		if n == g.PState.S {
			v.pstate = gonvml.Pstates(i)
		}
	}
	state := func(method string, x event.Text) int {
		switch {
		case x.Status != event.CellOK:
			v.fail[method] = smiRet(x.Status)
		case x.S == "Enabled":
			return 1
		case x.S != "Disabled":
			t.Fatalf("%s: %q", method, x.S)
		}
		return 0
	}
	v.persistence = gonvml.EnableState(state("persistence", g.Persistence))
	v.ecc = gonvml.EnableState(state("ecc", g.ECCMode))
	v.mig = state("mig", g.MIGMode)
	v.name, v.uuid, v.bus = g.Name.S, g.UUID.S, g.BusID.S
	return v
}

// sameState: equal Status, or nvidia-smi's "[N/A]" where NVML says
// NOT_SUPPORTED (both non-values, neither ever 0).
func sameState(smi, nv event.CellStatus) bool {
	return smi == nv || smi == event.CellNA && nv == event.CellNotSupported
}

// For the GPUs of real nvidia-smi captures, the NVML row and the row
// probes/gpu's parser makes of the capture's CSV line agree field by
// field: values exactly (units converted), non-values as the same state.
func TestEquivalentToNvidiaSMIParser(t *testing.T) {
	for _, fixture := range []string{
		"h200-load-query-gpu.csv",
		"rtx4080super-load-query-gpu.csv",
		"csv-mig-h100-full-width-idle.txt",
	} {
		t.Run(fixture, func(t *testing.T) {
			smi := parseFixture(t, fixture)
			srv := dgxa100.New()
			srv.Devices = srv.Devices[:1]
			d := srv.Devices[0].(*dgxa100.Device)
			fill(d, valsFrom(t, smi))
			srv.LookupSymbolFunc = func(string) error { return nil }
			s, err := OpenLibrary(srv, Options{NoXid: true, NoApps: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			smp, err := s.Sample()
			if err != nil {
				t.Fatal(err)
			}
			nv := smp.GPUs[0]
			if nv.Index != smi.Index {
				t.Errorf("index %d, nvidia-smi %d", nv.Index, smi.Index)
			}
			texts := []struct {
				name    string
				smi, nv event.Text
			}{
				{"name", smi.Name, nv.Name}, {"pci.bus_id", smi.BusID, nv.BusID}, {"uuid", smi.UUID, nv.UUID},
				{"pstate", smi.PState, nv.PState}, {"persistence_mode", smi.Persistence, nv.Persistence},
				{"ecc.mode.current", smi.ECCMode, nv.ECCMode}, {"mig.mode.current", smi.MIGMode, nv.MIGMode},
			}
			for _, c := range texts {
				if !sameState(c.smi.Status, c.nv.Status) || c.smi.Status == event.CellOK && c.smi.S != c.nv.S {
					t.Errorf("%s: nvidia-smi %+v, NVML %+v", c.name, c.smi, c.nv)
				}
			}
			readings := []struct {
				name    string
				smi, nv event.Reading
			}{
				{"utilization.gpu", smi.UtilGPUPct, nv.UtilGPUPct}, {"utilization.memory", smi.UtilMemPct, nv.UtilMemPct},
				{"memory.used", smi.MemUsedMiB, nv.MemUsedMiB}, {"memory.total", smi.MemTotalMiB, nv.MemTotalMiB},
				{"power.draw", smi.PowerDrawW, nv.PowerDrawW}, {"power.limit", smi.PowerLimitW, nv.PowerLimitW},
				{"temperature.gpu", smi.TempC, nv.TempC}, {"clocks.current.sm", smi.SMClockMHz, nv.SMClockMHz},
				{"clocks.current.memory", smi.MemClockMHz, nv.MemClockMHz}, {"clocks.max.sm", smi.SMClockMax, nv.SMClockMax},
				{"fan.speed", smi.FanPct, nv.FanPct},
				{"pcie.link.gen.current", smi.PCIeGenCurrent, nv.PCIeGenCurrent}, {"pcie.link.gen.max", smi.PCIeGenMax, nv.PCIeGenMax},
				{"pcie.link.width.current", smi.PCIeWidthCurrent, nv.PCIeWidthCurrent}, {"pcie.link.width.max", smi.PCIeWidthMax, nv.PCIeWidthMax},
			}
			checked := 0
			for _, c := range readings {
				if c.smi.Status == event.CellAbsent {
					t.Errorf("%s: not in the fixture", c.name)
				}
				if !sameState(c.smi.Status, c.nv.Status) || c.smi.Status == event.CellOK && c.smi.Value != c.nv.Value {
					t.Errorf("%s: nvidia-smi %+v, NVML %+v", c.name, c.smi, c.nv)
				}
				checked++
			}
			if smi.ClockEvents != nv.ClockEvents {
				t.Errorf("clocks_event_reasons.active: nvidia-smi %+v, NVML %+v", smi.ClockEvents, nv.ClockEvents)
			}
			if smi.Lost != nv.Lost {
				t.Errorf("lost: nvidia-smi %v, NVML %v", smi.Lost, nv.Lost)
			}
			if checked != 15 {
				t.Errorf("%d readings compared", checked)
			}
		})
	}
}
