//go:build linux && cgo

package nvml

import (
	"errors"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

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
