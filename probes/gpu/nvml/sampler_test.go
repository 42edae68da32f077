//go:build linux && cgo

package nvml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

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

// A failed Init must be followed by no call at all: with the real library
// any other function (Shutdown and ErrorString included) kills the
// process. The mock has no other Func set, so any call would panic.
func TestInitFailureCallsNothingElse(t *testing.T) {
	for _, tc := range []struct {
		ret  gonvml.Return
		want string
	}{
		{gonvml.ERROR_LIBRARY_NOT_FOUND, "NVML init failed: ERROR_LIBRARY_NOT_FOUND (no libnvidia-ml.so.1: is the NVIDIA driver installed?)"},
		{gonvml.ERROR_DRIVER_NOT_LOADED, "NVML init failed: ERROR_DRIVER_NOT_LOADED (the NVIDIA kernel driver is not loaded: check `lsmod | grep nvidia` and dmesg)"},
		{gonvml.ERROR_NO_PERMISSION, "NVML init failed: ERROR_NO_PERMISSION (no permission to open the NVIDIA device files (/dev/nvidia*))"},
		{gonvml.ERROR_LIB_RM_VERSION_MISMATCH, "NVML init failed: ERROR_LIB_RM_VERSION_MISMATCH (driver/library version mismatch: reboot, or reload the nvidia kernel module)"},
		{gonvml.ERROR_UNKNOWN, "NVML init failed: ERROR_UNKNOWN (unknown error (in a container, the device cgroup may have lost the GPU))"},
		{gonvml.ERROR_INSUFFICIENT_SIZE, "NVML init failed: ERROR_INSUFFICIENT_SIZE"},
		{gonvml.Return(4242), "NVML init failed: NVML_RETURN_4242"},
	} {
		calls := 0
		lib := &mock.Interface{InitFunc: func() gonvml.Return { calls++; return tc.ret }}
		var s *Sampler
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s: a call after the failed Init: %v", retName(tc.ret), p)
				}
			}()
			s, err = OpenLibrary(lib, Options{})
		}()
		var ue *UnavailableError
		if s != nil || !errors.As(err, &ue) {
			t.Fatalf("%s: got %v, %v; want *UnavailableError", retName(tc.ret), s, err)
		}
		if ue.Code != int(tc.ret) || ue.Reason != tc.want {
			t.Errorf("%s: %+v, want code %d reason %q", retName(tc.ret), ue, tc.ret, tc.want)
		}
		if calls != 1 || len(lib.ShutdownCalls()) != 0 || len(lib.ExtensionsCalls()) != 0 || len(lib.ErrorStringCalls()) != 0 {
			t.Errorf("%s: Init called %d times; Shutdown %d, Extensions %d, ErrorString %d; want 1, 0, 0, 0",
				retName(tc.ret), calls, len(lib.ShutdownCalls()), len(lib.ExtensionsCalls()), len(lib.ErrorStringCalls()))
		}
	}
}

func TestOpenUnavailableAfterInit(t *testing.T) {
	t.Run("no GPU", func(t *testing.T) {
		x := newDGX(t)
		x.srv.Devices = nil
		_, err := OpenLibrary(x.srv, Options{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Reason != "NVML lists no GPU" {
			t.Fatalf("err = %v", err)
		}
		if len(x.srv.ShutdownCalls()) != 1 {
			t.Errorf("Shutdown called %d times, want 1", len(x.srv.ShutdownCalls()))
		}
	})
	t.Run("count fails", func(t *testing.T) {
		x := newDGX(t)
		x.srv.DeviceGetCountFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_UNKNOWN }
		_, err := OpenLibrary(x.srv, Options{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Code != int(gonvml.ERROR_UNKNOWN) || len(x.srv.ShutdownCalls()) != 1 {
			t.Fatalf("err = %v, shutdowns %d", err, len(x.srv.ShutdownCalls()))
		}
	})
	t.Run("no handle", func(t *testing.T) {
		x := newDGX(t)
		x.srv.DeviceGetHandleByIndexFunc = func(int) (gonvml.Device, gonvml.Return) { return nil, gonvml.ERROR_GPU_IS_LOST }
		_, err := OpenLibrary(x.srv, Options{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || ue.Reason != "NVML could not open any of 8 GPUs: ERROR_GPU_IS_LOST" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("library without count", func(t *testing.T) {
		x := newDGX(t)
		x.missing["nvmlDeviceGetCount_v2"], x.missing["nvmlDeviceGetCount"] = true, true
		_, err := OpenLibrary(x.srv, Options{})
		var ue *UnavailableError
		if !errors.As(err, &ue) || len(x.srv.DeviceGetCountCalls()) != 0 {
			t.Fatalf("err = %v, count calls %d", err, len(x.srv.DeviceGetCountCalls()))
		}
	})
}

func TestCloseShutsDownOnce(t *testing.T) {
	x := newDGX(t)
	s, err := OpenLibrary(x.srv, Options{NoXid: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(x.srv.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times, want 1", n)
	}
	if _, err := s.Sample(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sample after Close: %v, want ErrClosed", err)
	}
}

// deviceCalls counts, per symbol, the calls to the mock method bound to it.
var deviceCalls = map[string]func(d *mock.Device) int{
	"nvmlDeviceGetName":                         func(d *mock.Device) int { return len(d.GetNameCalls()) },
	"nvmlDeviceGetUUID":                         func(d *mock.Device) int { return len(d.GetUUIDCalls()) },
	"nvmlDeviceGetPciInfo":                      func(d *mock.Device) int { return len(d.GetPciInfoCalls()) },
	"nvmlDeviceGetUtilizationRates":             func(d *mock.Device) int { return len(d.GetUtilizationRatesCalls()) },
	"nvmlDeviceGetMemoryInfo_v2":                func(d *mock.Device) int { return len(d.GetMemoryInfo_v2Calls()) },
	"nvmlDeviceGetMemoryInfo":                   func(d *mock.Device) int { return len(d.GetMemoryInfoCalls()) },
	"nvmlDeviceGetPowerUsage":                   func(d *mock.Device) int { return len(d.GetPowerUsageCalls()) },
	"nvmlDeviceGetPowerManagementLimit":         func(d *mock.Device) int { return len(d.GetPowerManagementLimitCalls()) },
	"nvmlDeviceGetTemperature":                  func(d *mock.Device) int { return len(d.GetTemperatureCalls()) },
	"nvmlDeviceGetClockInfo":                    func(d *mock.Device) int { return len(d.GetClockInfoCalls()) },
	"nvmlDeviceGetMaxClockInfo":                 func(d *mock.Device) int { return len(d.GetMaxClockInfoCalls()) },
	"nvmlDeviceGetFanSpeed":                     func(d *mock.Device) int { return len(d.GetFanSpeedCalls()) },
	"nvmlDeviceGetPerformanceState":             func(d *mock.Device) int { return len(d.GetPerformanceStateCalls()) },
	"nvmlDeviceGetCurrPcieLinkGeneration":       func(d *mock.Device) int { return len(d.GetCurrPcieLinkGenerationCalls()) },
	"nvmlDeviceGetMaxPcieLinkGeneration":        func(d *mock.Device) int { return len(d.GetMaxPcieLinkGenerationCalls()) },
	"nvmlDeviceGetCurrPcieLinkWidth":            func(d *mock.Device) int { return len(d.GetCurrPcieLinkWidthCalls()) },
	"nvmlDeviceGetMaxPcieLinkWidth":             func(d *mock.Device) int { return len(d.GetMaxPcieLinkWidthCalls()) },
	"nvmlDeviceGetCurrentClocksEventReasons":    func(d *mock.Device) int { return len(d.GetCurrentClocksEventReasonsCalls()) },
	"nvmlDeviceGetCurrentClocksThrottleReasons": func(d *mock.Device) int { return len(d.GetCurrentClocksThrottleReasonsCalls()) },
	"nvmlDeviceGetPersistenceMode":              func(d *mock.Device) int { return len(d.GetPersistenceModeCalls()) },
	"nvmlDeviceGetEccMode":                      func(d *mock.Device) int { return len(d.GetEccModeCalls()) },
	"nvmlDeviceGetMigMode":                      func(d *mock.Device) int { return len(d.GetMigModeCalls()) },
	"nvmlDeviceGetComputeRunningProcesses":      func(d *mock.Device) int { return len(d.GetComputeRunningProcessesCalls()) },
	"nvmlDeviceGetPcieThroughput":               func(d *mock.Device) int { return len(d.GetPcieThroughputCalls()) },
	"nvmlDeviceRegisterEvents":                  func(d *mock.Device) int { return len(d.RegisterEventsCalls()) },
}

// Every guarded per-device function, its symbols all missing, is never
// called, and the field it fills is Absent (or comes from the older
// function).
func TestMissingSymbolNeverCalled(t *testing.T) {
	for _, e := range symbolTable {
		base := e.names[len(e.names)-1]
		count, ok := deviceCalls[base]
		if !ok {
			continue
		}
		t.Run(base, func(t *testing.T) {
			x := newDGX(t)
			for _, n := range e.names {
				x.missing[n] = true
			}
			s := x.open(t, Options{PCIe: true})
			smp := sample(t, s)
			if len(smp.GPUs) != 8 {
				t.Fatalf("%d GPUs", len(smp.GPUs))
			}
			for i, d := range x.devs {
				if n := count(&d.Device); n != 0 {
					t.Errorf("GPU %d: %s called %d times", i, base, n)
				}
			}
			g := smp.GPUs[0]
			var got event.CellStatus
			switch base {
			case "nvmlDeviceGetName":
				got = g.Name.Status
			case "nvmlDeviceGetFanSpeed":
				got = g.FanPct.Status
			case "nvmlDeviceGetPowerUsage":
				got = g.PowerDrawW.Status
			case "nvmlDeviceGetPcieThroughput":
				got = g.PCIeRxKBs.Status
			case "nvmlDeviceGetComputeRunningProcesses":
				if smp.Apps != nil {
					t.Errorf("Apps = %v, want nil (not read)", smp.Apps)
				}
				got = event.CellAbsent
			case "nvmlDeviceGetCurrentClocksEventReasons":
				// The legacy function answers instead.
				if g.ClockEvents.Status != event.CellOK || len(x.devs[0].GetCurrentClocksThrottleReasonsCalls()) == 0 {
					t.Errorf("clock events %+v without the legacy call", g.ClockEvents)
				}
				got = event.CellAbsent
			case "nvmlDeviceGetMemoryInfo_v2":
				// v1 answers instead: its Used counts reserved memory too.
				if g.MemUsedMiB != (event.Reading{Value: 1500}) {
					t.Errorf("memory used %+v, want v1's 1500 MiB", g.MemUsedMiB)
				}
				got = event.CellAbsent
			default:
				got = event.CellAbsent
			}
			if got != event.CellAbsent {
				t.Errorf("field status %v, want absent", got)
			}
		})
	}
}

func TestClockEventsAbsentWithoutEitherSymbol(t *testing.T) {
	x := newDGX(t)
	x.missing["nvmlDeviceGetCurrentClocksEventReasons"] = true
	x.missing["nvmlDeviceGetCurrentClocksThrottleReasons"] = true
	g := sample(t, x.open(t, Options{NoXid: true})).GPUs[0]
	if g.ClockEvents != (event.ClockEvents{Status: event.CellAbsent}) {
		t.Errorf("clock events %+v, want absent", g.ClockEvents)
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

// fakeProcNS makes proc/self/ns/pid a link to ns, as the kernel shows a
// PID namespace ("pid:[4026531836]" for the host's).
func fakeProcNS(t *testing.T, proc, ns string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(proc, "self", "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ns, filepath.Join(proc, "self", "ns", "pid")); err != nil {
		t.Fatal(err)
	}
}

func TestAppsTwoProcessesOnOneGPU(t *testing.T) {
	proc := t.TempDir()
	fakeProcNS(t, proc, initPIDNamespace)
	// argv[0] names a process, as nvidia-smi's process_name does; the
	// task name only when the command line is empty (a zombie).
	for pid, f := range map[int]struct{ cmdline, comm string }{
		4242: {"/usr/bin/python3\x00-m\x00sglang.launch_server\x00", "python3\n"},
		777:  {"", "sglang\x1b]0;pwned\x07\n"},
		5150: {"sglang::scheduler_TP2\x00\x00\x00\x00", "python3\n"}, // setproctitle's padding
		6000: {strings.Repeat("x", 300) + "\x00", "x\n"},
	} {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(f.cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "comm"), []byte(f.comm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := newDGX(t)
	x.vals[2].procs = []gonvml.ProcessInfo{
		{Pid: 4242, UsedGpuMemory: 2296*mib + 5},
		{Pid: 777, UsedGpuMemory: 1 << 30},
		{Pid: 6000, UsedGpuMemory: 0},
		{Pid: 5150, UsedGpuMemory: 70000 * mib},
	}
	x.vals[6].procs = []gonvml.ProcessInfo{
		{Pid: 9999, UsedGpuMemory: ^uint64(0)}, // NVML_VALUE_NOT_AVAILABLE; no /proc entry
	}
	x.vals[7].setFail("procs", gonvml.ERROR_NOT_SUPPORTED)
	s := x.open(t, Options{NoXid: true})
	s.names.proc = proc
	smp := sample(t, s)
	bus2 := event.Text{S: "00000000:27:00.0"}
	uuid2 := event.Text{S: "GPU-a100-2"}
	want := []event.ComputeApp{
		{PID: 777, Name: event.Text{S: "sglang]0;pwned\\x07"}, UsedMiB: event.Reading{Value: 1024}, BusID: bus2, UUID: uuid2},
		{PID: 4242, Name: event.Text{S: "/usr/bin/python3"}, UsedMiB: event.Reading{Value: 2296}, BusID: bus2, UUID: uuid2},
		{PID: 5150, Name: event.Text{S: "sglang::scheduler_TP2"}, UsedMiB: event.Reading{Value: 70000}, BusID: bus2, UUID: uuid2},
		{PID: 6000, Name: event.Text{S: strings.Repeat("x", maxProcessName)}, UsedMiB: event.Reading{Value: 0}, BusID: bus2, UUID: uuid2},
		{PID: 9999, Name: event.Text{S: "[N/A]", Status: event.CellNA}, UsedMiB: event.Reading{Status: event.CellNA, Raw: "[N/A]"},
			BusID: event.Text{S: "00000000:67:00.0"}, UUID: event.Text{S: "GPU-a100-6"}},
	}
	if len(smp.Apps) != len(want) {
		t.Fatalf("apps %+v, want %+v", smp.Apps, want)
	}
	for i := range want {
		if smp.Apps[i].Name.S != want[i].Name.S && smp.Apps[i].PID == 777 {
			// The exact escape of a control byte is sanitize's business;
			// what matters is that no ESC or BEL reaches the terminal.
			want[i].Name = smp.Apps[i].Name
		}
		if smp.Apps[i] != want[i] {
			t.Errorf("app %d: %+v, want %+v", i, smp.Apps[i], want[i])
		}
	}
	for _, a := range smp.Apps {
		for _, c := range a.Name.S {
			if c == 0x1b || c == 0x07 {
				t.Errorf("process name %q keeps a control character", a.Name.S)
			}
		}
	}
	t.Run("NoApps", func(t *testing.T) {
		x := newDGX(t)
		smp := sample(t, x.open(t, Options{NoXid: true, NoApps: true}))
		if smp.Apps != nil || len(x.devs[0].GetComputeRunningProcessesCalls()) != 0 {
			t.Errorf("NoApps: apps %v, %d calls", smp.Apps, len(x.devs[0].GetComputeRunningProcessesCalls()))
		}
	})
}

func TestProcessNameFromProc(t *testing.T) {
	// The real /proc: this test process's own name, when the test runs in
	// the host's PID namespace; in a container, no name.
	var c nameCache
	c.begin()
	got := c.name(os.Getpid())
	c.end()
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	want := event.Text{S: os.Args[0]}
	if !strings.HasPrefix(string(b), os.Args[0]+"\x00") {
		t.Fatalf("/proc/self/cmdline %q does not start with argv[0] %q", b, os.Args[0])
	}
	if ns, _ := os.Readlink("/proc/self/ns/pid"); ns != initPIDNamespace {
		want = event.Text{S: "[N/A]", Status: event.CellNA}
		t.Logf("PID namespace %q is not the host's: names are [N/A]", ns)
	}
	if got != want {
		t.Errorf("name %+v, want %+v", got, want)
	}
	// A PID absent from a tick is forgotten.
	c.begin()
	c.end()
	if len(c.entries) != 0 {
		t.Errorf("cache keeps %d entries after a tick without them", len(c.entries))
	}
}

// In another PID namespace than the host's (a container without
// --pid=host), /proc/PID is not NVML's PID: no name is read, even where
// /proc has one; the PID and memory are still shown. A /proc without ns
// links reads the same.
func TestProcessNameOutsideHostPIDNamespace(t *testing.T) {
	for _, ns := range []string{"pid:[4026532517]", ""} {
		proc := t.TempDir()
		if ns != "" {
			fakeProcNS(t, proc, ns)
		}
		if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, "4242", "comm"), []byte("bash\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		x := newDGX(t)
		x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 * mib}}
		s := x.open(t, Options{NoXid: true})
		s.names.proc = proc
		smp := sample(t, s)
		if len(smp.Apps) != 1 {
			t.Fatalf("ns %q: apps %+v", ns, smp.Apps)
		}
		a := smp.Apps[0]
		if a.PID != 4242 || a.Name != (event.Text{S: "[N/A]", Status: event.CellNA}) || a.UsedMiB != (event.Reading{Value: 3}) {
			t.Errorf("ns %q: app %+v, want PID 4242, no name, 3 MiB", ns, a)
		}
	}
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

// TestProcessNameReadThatBlocks: a /proc/PID/cmdline read that blocks (the
// kernel waits for the mmap lock of a process stuck in the driver; here a
// FIFO nobody writes) does not hold the sample: the task name names the
// process.
func TestProcessNameReadThatBlocks(t *testing.T) {
	proc := t.TempDir()
	fakeProcNS(t, proc, initPIDNamespace)
	dir := filepath.Join(proc, "4242")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "cmdline")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	t.Cleanup(func() {
		// Let the abandoned reader finish.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	if err := os.WriteFile(filepath.Join(dir, "comm"), []byte("python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x := newDGX(t)
	x.vals[0].procs = []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 3 * mib}}
	s := x.open(t, Options{NoXid: true})
	s.names.proc = proc
	smp := sample(t, s)
	if len(smp.Apps) != 1 || smp.Apps[0].Name != (event.Text{S: "python3"}) {
		t.Errorf("apps %+v, want pid 4242 named by its task name", smp.Apps)
	}
}
