//go:build linux && cgo

package nvml

// A sample's GPU rows: every field of a DGX A100, P-states, GPUs lost
// before or during sampling, unsupported and refused functions, handles
// refused at first, PCIe throughput on and off.

import (
	"fmt"
	"reflect"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestDGXA100EveryField(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{NoXid: true})
	if got, want := s.Info(), (Info{Driver: "550.54.15", NVML: "12.550.54.15", CUDA: 12040, GPUs: 8}); got != want {
		t.Errorf("Info = %+v, want %+v", got, want)
	}
	smp := sample(t, s)
	if len(smp.GPUs) != 8 || smp.Missing != nil {
		t.Fatalf("%d GPUs, missing %v; want 8, none", len(smp.GPUs), smp.Missing)
	}
	ok := func(v float64) event.Reading { return event.Reading{Value: v} }
	absent := event.Reading{Status: event.CellAbsent}
	for i, g := range smp.GPUs {
		want := event.GPU{
			Index:       i,
			Name:        event.Text{S: "NVIDIA A100-SXM4-40GB"},
			BusID:       event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x07+0x10*i)},
			UUID:        event.Text{S: fmt.Sprintf("GPU-a100-%d", i)},
			UtilGPUPct:  ok(float64(10 + i)),
			UtilMemPct:  ok(float64(3 + i)),
			MemUsedMiB:  ok(float64(1000 + i)), // bytes floored to MiB, reserved not counted
			MemTotalMiB: ok(40960),
			PowerDrawW:  ok(float64(215430+i) / 1000), // mW → W
			PowerLimitW: ok(400),
			TempC:       ok(float64(40 + i)),
			SMClockMHz:  ok(1410), MemClockMHz: ok(1215), SMClockMax: ok(1410),
			FanPct:         ok(0),
			PState:         event.Text{S: "P0"},
			PCIeGenCurrent: ok(4), PCIeGenMax: ok(4), PCIeWidthCurrent: ok(16), PCIeWidthMax: ok(16),
			ClockEvents: event.ClockEvents{Mask: event.ReasonGPUIdle | event.ReasonSWPowerCap},
			Persistence: event.Text{S: "Enabled"}, ECCMode: event.Text{S: "Enabled"}, MIGMode: event.Text{S: "Disabled"},
			PCIeRxKBs: absent, PCIeTxKBs: absent,
		}
		if !reflect.DeepEqual(g, want) {
			t.Errorf("GPU %d:\n got %+v\nwant %+v", i, g, want)
		}
	}
	if smp.At.IsZero() {
		t.Error("sample has no time")
	}
	if smp.Apps == nil || len(smp.Apps) != 0 {
		t.Errorf("Apps = %#v, want empty, not nil", smp.Apps)
	}
}

func TestPStateText(t *testing.T) {
	for _, tc := range []struct {
		p    gonvml.Pstates
		want event.Text
	}{
		{gonvml.PSTATE_0, event.Text{S: "P0"}},
		{gonvml.PSTATE_8, event.Text{S: "P8"}},
		{gonvml.PSTATE_12, event.Text{S: "P12"}},
		{gonvml.PSTATE_15, event.Text{S: "P15"}},
		{gonvml.PSTATE_UNKNOWN, event.Text{S: "[N/A]", Status: event.CellNA}},
	} {
		x := newDGX(t)
		x.vals[0].pstate = tc.p
		if got := sample(t, x.open(t, Options{NoXid: true})).GPUs[0].PState; got != tc.want {
			t.Errorf("P-state %d: %+v, want %+v", tc.p, got, tc.want)
		}
	}
}

func TestOneLostGPUAmongEight(t *testing.T) {
	x := newDGX(t)
	s := x.open(t, Options{NoXid: true})
	sample(t, s) // identity read while healthy
	x.vals[3].setFail("*", gonvml.ERROR_GPU_IS_LOST)
	before := len(x.devs[3].GetPowerUsageCalls())
	for tick := 0; tick < 3; tick++ {
		for i, v := range x.vals {
			v.mu.Lock()
			v.util = uint32(20*tick + i)
			v.mu.Unlock()
		}
		smp := sample(t, s)
		if len(smp.GPUs) != 8 {
			t.Fatalf("tick %d: %d GPUs", tick, len(smp.GPUs))
		}
		for i, g := range smp.GPUs {
			if i == 3 {
				lost := event.Reading{Status: event.CellLost, Raw: "[GPU is lost]"}
				if !g.Lost || !g.ShowsLost() || g.UtilGPUPct != lost || g.MemUsedMiB != lost || g.TempC != lost ||
					g.PowerDrawW != lost || g.PState != (event.Text{S: "[GPU is lost]", Status: event.CellLost}) {
					t.Errorf("tick %d: lost GPU row %+v", tick, g)
				}
				if g.Name.S != "NVIDIA A100-SXM4-40GB" || g.BusID.S != "00000000:37:00.0" {
					t.Errorf("tick %d: lost GPU lost its identity: %+v %+v", tick, g.Name, g.BusID)
				}
				continue
			}
			if g.Lost || g.UtilGPUPct != (event.Reading{Value: float64(20*tick + i)}) || !g.TempC.Valid() {
				t.Errorf("tick %d: GPU %d: lost %v util %+v temp %+v", tick, i, g.Lost, g.UtilGPUPct, g.TempC)
			}
		}
	}
	// After the first lost answer, the GPU's other functions are not called.
	if n := len(x.devs[3].GetPowerUsageCalls()); n != before {
		t.Errorf("lost GPU: power read %d more times", n-before)
	}
}

func TestNotSupportedIsNeverZero(t *testing.T) {
	x := newDGX(t)
	x.vals[0].setFail("fan", gonvml.ERROR_NOT_SUPPORTED)  // SXM: no fan
	x.vals[1].setFail("util", gonvml.ERROR_NOT_SUPPORTED) // MIG parent
	x.vals[1].mig = gonvml.DEVICE_MIG_ENABLE
	x.vals[2].setFail("ecc", gonvml.ERROR_NOT_SUPPORTED)
	x.vals[2].setFail("mig", gonvml.ERROR_NOT_SUPPORTED)
	x.vals[3].setFail("power", gonvml.ERROR_NO_PERMISSION)
	x.vals[4].setFail("temp", gonvml.ERROR_UNKNOWN)
	x.vals[5].setFail("reasons", gonvml.ERROR_TIMEOUT)
	x.vals[6].setFail("limit", gonvml.ERROR_DEPRECATED)
	x.vals[7].setFail("mem", gonvml.ERROR_FUNCTION_NOT_FOUND)
	smp := sample(t, x.open(t, Options{NoXid: true}))
	// NOT_SUPPORTED reads as nvidia-smi prints these cells: "[N/A]".
	ns := event.Reading{Status: event.CellNA, Raw: "[N/A]"}
	nsText := event.Text{S: "[N/A]", Status: event.CellNA}
	g := smp.GPUs
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"fan on SXM", g[0].FanPct, ns},
		{"util on MIG parent", g[1].UtilGPUPct, ns},
		{"mem util on MIG parent", g[1].UtilMemPct, ns},
		{"MIG mode on MIG parent", g[1].MIGMode, event.Text{S: "Enabled"}},
		{"ECC on GeForce", g[2].ECCMode, nsText},
		{"MIG on GeForce", g[2].MIGMode, nsText},
		{"power without permission", g[3].PowerDrawW, event.Reading{Status: event.CellOther, Raw: "[Insufficient Permissions]"}},
		{"temp unknown error", g[4].TempC, event.Reading{Status: event.CellUnknownError, Raw: "[Unknown Error]"}},
		{"reasons timeout", g[5].ClockEvents, event.ClockEvents{Status: event.CellOther, Raw: "[ERROR_TIMEOUT]"}},
		{"limit deprecated", g[6].PowerLimitW, event.Reading{Status: event.CellDeprecated, Raw: "[Requested functionality has been deprecated]"}},
		{"memory function not found", g[7].MemUsedMiB, event.Reading{Status: event.CellAbsent}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	for i := range g {
		if g[i].Lost {
			t.Errorf("GPU %d marked lost", i)
		}
	}
}

// A GPU whose handle NVML refuses is Missing until NVML gives one.
func TestRefusedHandleIsMissing(t *testing.T) {
	x := newDGX(t)
	refuse := true
	orig := x.srv.DeviceGetHandleByIndexFunc
	x.srv.DeviceGetHandleByIndexFunc = func(i int) (gonvml.Device, gonvml.Return) {
		if i == 5 && refuse {
			return nil, gonvml.ERROR_UNKNOWN
		}
		return orig(i)
	}
	s := x.open(t, Options{NoXid: true})
	smp := sample(t, s)
	if len(smp.GPUs) != 7 || !reflect.DeepEqual(smp.Missing, []int{5}) {
		t.Fatalf("%d GPUs, missing %v; want 7, [5]", len(smp.GPUs), smp.Missing)
	}
	refuse = false
	smp = sample(t, s)
	if len(smp.GPUs) != 8 || smp.Missing != nil || smp.GPUs[5].Index != 5 {
		t.Fatalf("after recovery: %d GPUs, missing %v", len(smp.GPUs), smp.Missing)
	}
}

func TestPCIeOnOff(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		x := newDGX(t)
		g := sample(t, x.open(t, Options{NoXid: true})).GPUs[2]
		if g.PCIeRxKBs.Status != event.CellAbsent || g.PCIeTxKBs.Status != event.CellAbsent {
			t.Errorf("PCIe %+v %+v, want absent", g.PCIeRxKBs, g.PCIeTxKBs)
		}
		if n := len(x.devs[2].GetPcieThroughputCalls()); n != 0 {
			t.Errorf("throughput read %d times with PCIe off", n)
		}
	})
	t.Run("on", func(t *testing.T) {
		x := newDGX(t)
		x.vals[4].setFail("pcie", gonvml.ERROR_NOT_SUPPORTED)
		g := sample(t, x.open(t, Options{NoXid: true, PCIe: true})).GPUs
		if g[2].PCIeRxKBs != (event.Reading{Value: 3000}) || g[2].PCIeTxKBs != (event.Reading{Value: 6000}) {
			t.Errorf("PCIe rx %+v tx %+v, want 3000, 6000 KB/s", g[2].PCIeRxKBs, g[2].PCIeTxKBs)
		}
		if g[4].PCIeRxKBs != (event.Reading{Status: event.CellNA, Raw: "[N/A]"}) {
			t.Errorf("unsupported PCIe throughput: %+v", g[4].PCIeRxKBs)
		}
	})
}

// TestLostBeforeTheFirstRead: a GPU already lost when sampling starts
// keeps the name and bus id the driver still gives, as nvidia-smi prints
// them, and its data reads lost.
func TestLostBeforeTheFirstRead(t *testing.T) {
	x := newDGX(t)
	x.vals[2].setFail("util", gonvml.ERROR_GPU_IS_LOST)
	g := sample(t, x.open(t, Options{NoXid: true})).GPUs[2]
	if g.Name.S != "NVIDIA A100-SXM4-40GB" || g.Name.Status != event.CellOK || g.BusID.Status != event.CellOK {
		t.Errorf("identity of a GPU lost before the first read: %+v %+v", g.Name, g.BusID)
	}
	if !g.Lost || g.UtilGPUPct.Status != event.CellLost || g.TempC.Status != event.CellLost {
		t.Errorf("data of a GPU lost before the first read: %+v", g)
	}
}
