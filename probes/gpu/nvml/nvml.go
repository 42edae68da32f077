// Package nvml samples NVIDIA GPUs in-process through NVML
// (libnvidia-ml.so.1, via github.com/NVIDIA/go-nvml v0.13.x), the way nvtop,
// nvitop and btop do: no process is spawned per sample, and the driver is
// initialised once.
//
// It fills the same event.GPUSample as the nvidia-smi stream (probes/gpu), plus
// per-process GPU memory (event.GPUSample.Apps), optional PCIe rx/tx throughput,
// and Xid events (event.Xid) from an NVML event set.
//
// NVML needs cgo on Linux. Built otherwise (CGO_ENABLED=0, macOS), Open
// returns an *UnavailableError and nothing else in this package touches
// NVML. After a failed nvmlInit no other NVML function is called: that
// would kill the process (the loader cannot resolve the symbol).
package nvml

import (
	"errors"
	"time"
)

// ErrClosed is returned by Sample and Run after Close.
var ErrClosed = errors.New("nvml: sampler is closed")

// Options configures Open. The zero value samples every second with
// per-process memory and Xid events and without PCIe throughput.
type Options struct {
	// Interval is the time between samples; default 1 s, at least 10 ms.
	Interval time.Duration
	// PCIe reads PCIe rx/tx throughput (event.GPU.PCIeRxKBs/PCIeTxKBs).
	// Off by default: nvmlDeviceGetPcieThroughput blocks about 20 ms per
	// GPU per direction, so it runs on its own slower cadence.
	PCIe bool
	// NoApps skips per-process GPU memory (event.GPUSample.Apps stays nil).
	NoApps bool
	// NoXid registers no event set: no event.Xid events.
	NoXid bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Info describes the NVML library and driver Open found.
type Info struct {
	Driver string // "550.54.15" (nvmlSystemGetDriverVersion)
	NVML   string // "12.550.54.15" (nvmlSystemGetNVMLVersion)
	CUDA   int    // CUDA driver version, 12040 for 12.4; 0 when unknown
	GPUs   int    // devices NVML counts
}

// UnavailableError says why NVML cannot be used here. The cockpit shows
// Reason in its header when it falls back to nvidia-smi.
type UnavailableError struct {
	// Reason: "this build has no cgo (CGO_ENABLED=0)", "NVML needs Linux",
	// "NVML init failed: ERROR_LIBRARY_NOT_FOUND (no libnvidia-ml.so.1: is
	// the NVIDIA driver installed?)", "NVML lists no GPU", …
	Reason string
	// Code is the NVML return code of a failed call (nvmlReturn_t: 12 for
	// ERROR_LIBRARY_NOT_FOUND, 9 DRIVER_NOT_LOADED, 18
	// LIB_RM_VERSION_MISMATCH, …), 0 when no NVML call failed.
	Code int
}

func (e *UnavailableError) Error() string { return "nvml unavailable: " + e.Reason }

// Compiled reports whether this binary can use NVML at all: it was built
// for Linux with cgo. It says nothing of whether this machine has a driver
// (Open tells that). The cockpit uploads itself as the agent only when the
// answer is true.
func Compiled() bool { return compiled }
