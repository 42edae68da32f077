//go:build linux && cgo

package nvml

import (
	"strconv"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// NVML return codes (nvmlReturn_t) are named here, not with Return.Error:
// once libnvidia-ml.so.1 is loaded, go-nvml's Error calls nvmlErrorString
// in the library, which this package never does before a successful init
// (and need not do after). The names are the nvml.h enumerators.
var returnNames = map[gonvml.Return]string{
	gonvml.SUCCESS:                         "SUCCESS",
	gonvml.ERROR_UNINITIALIZED:             "ERROR_UNINITIALIZED",
	gonvml.ERROR_INVALID_ARGUMENT:          "ERROR_INVALID_ARGUMENT",
	gonvml.ERROR_NOT_SUPPORTED:             "ERROR_NOT_SUPPORTED",
	gonvml.ERROR_NO_PERMISSION:             "ERROR_NO_PERMISSION",
	gonvml.ERROR_ALREADY_INITIALIZED:       "ERROR_ALREADY_INITIALIZED",
	gonvml.ERROR_NOT_FOUND:                 "ERROR_NOT_FOUND",
	gonvml.ERROR_INSUFFICIENT_SIZE:         "ERROR_INSUFFICIENT_SIZE",
	gonvml.ERROR_INSUFFICIENT_POWER:        "ERROR_INSUFFICIENT_POWER",
	gonvml.ERROR_DRIVER_NOT_LOADED:         "ERROR_DRIVER_NOT_LOADED",
	gonvml.ERROR_TIMEOUT:                   "ERROR_TIMEOUT",
	gonvml.ERROR_IRQ_ISSUE:                 "ERROR_IRQ_ISSUE",
	gonvml.ERROR_LIBRARY_NOT_FOUND:         "ERROR_LIBRARY_NOT_FOUND",
	gonvml.ERROR_FUNCTION_NOT_FOUND:        "ERROR_FUNCTION_NOT_FOUND",
	gonvml.ERROR_CORRUPTED_INFOROM:         "ERROR_CORRUPTED_INFOROM",
	gonvml.ERROR_GPU_IS_LOST:               "ERROR_GPU_IS_LOST",
	gonvml.ERROR_RESET_REQUIRED:            "ERROR_RESET_REQUIRED",
	gonvml.ERROR_OPERATING_SYSTEM:          "ERROR_OPERATING_SYSTEM",
	gonvml.ERROR_LIB_RM_VERSION_MISMATCH:   "ERROR_LIB_RM_VERSION_MISMATCH",
	gonvml.ERROR_IN_USE:                    "ERROR_IN_USE",
	gonvml.ERROR_MEMORY:                    "ERROR_MEMORY",
	gonvml.ERROR_NO_DATA:                   "ERROR_NO_DATA",
	gonvml.ERROR_VGPU_ECC_NOT_SUPPORTED:    "ERROR_VGPU_ECC_NOT_SUPPORTED",
	gonvml.ERROR_INSUFFICIENT_RESOURCES:    "ERROR_INSUFFICIENT_RESOURCES",
	gonvml.ERROR_FREQ_NOT_SUPPORTED:        "ERROR_FREQ_NOT_SUPPORTED",
	gonvml.ERROR_ARGUMENT_VERSION_MISMATCH: "ERROR_ARGUMENT_VERSION_MISMATCH",
	gonvml.ERROR_DEPRECATED:                "ERROR_DEPRECATED",
	gonvml.ERROR_NOT_READY:                 "ERROR_NOT_READY",
	gonvml.ERROR_GPU_NOT_FOUND:             "ERROR_GPU_NOT_FOUND",
	gonvml.ERROR_INVALID_STATE:             "ERROR_INVALID_STATE",
	gonvml.ERROR_RESET_TYPE_NOT_SUPPORTED:  "ERROR_RESET_TYPE_NOT_SUPPORTED",
	gonvml.ERROR_UNKNOWN:                   "ERROR_UNKNOWN",
}

// retName names an NVML return code ("ERROR_GPU_IS_LOST"); a code nvml.h
// (v0.13.4-1's copy) does not list is "NVML_RETURN_<n>".
func retName(r gonvml.Return) string {
	if s, ok := returnNames[r]; ok {
		return s
	}
	return "NVML_RETURN_" + strconv.Itoa(int(r))
}

// otherTokens holds the "[ERROR_…]" token of every named return code, so
// that a failed read does not allocate one per tick.
var otherTokens = func() map[gonvml.Return]string {
	m := make(map[gonvml.Return]string, len(returnNames))
	for r, n := range returnNames {
		m[r] = "[" + n + "]"
	}
	return m
}()

// Tokens nvidia-smi prints for the non-values NVML reports (the same
// literals probes/gpu recognises).
const (
	tokLost         = "[GPU is lost]"
	tokUnknown      = "[Unknown Error]"
	tokNoPermission = "[Insufficient Permissions]"
	tokDeprecated   = "[Requested functionality has been deprecated]"
	tokNA           = "[N/A]"
)

// nonValue maps a failed NVML read to the Status and literal token the
// nvidia-smi probe would show for that cell:
//
//	ERROR_NOT_SUPPORTED      NA           "[N/A]"
//	ERROR_GPU_IS_LOST        Lost         "[GPU is lost]"
//	ERROR_UNKNOWN            UnknownError "[Unknown Error]"
//	ERROR_NO_PERMISSION      OtherToken   "[Insufficient Permissions]"
//	ERROR_DEPRECATED         Deprecated   "[Requested functionality has been deprecated]"
//	ERROR_FUNCTION_NOT_FOUND Absent       "" (the driver lacks the function)
//	any other code           OtherToken   "[ERROR_…]" (its nvml.h name)
//
// Driver 590/595's nvidia-smi prints "[N/A]" (Status NA) for the cells
// NVML does not support (fan speed on SXM parts, utilisation of a MIG
// parent, MIG and ECC mode on GeForce), so NOT_SUPPORTED reads as NA here
// too: the cockpit shows one state whichever path sampled the GPU.
func nonValue(r gonvml.Return) (event.CellStatus, string) {
	switch r {
	case gonvml.ERROR_NOT_SUPPORTED:
		// nvidia-smi (drivers 590 and 595, the fixtures' captures) prints
		// "[N/A]" for exactly these cells — fan on SXM parts, utilisation
		// on a MIG parent, ECC/MIG mode on GeForce — so the cockpit shows
		// the same state whichever path sampled the GPU.
		return event.CellNA, tokNA
	case gonvml.ERROR_GPU_IS_LOST:
		return event.CellLost, tokLost
	case gonvml.ERROR_UNKNOWN:
		return event.CellUnknownError, tokUnknown
	case gonvml.ERROR_NO_PERMISSION:
		return event.CellOther, tokNoPermission
	case gonvml.ERROR_DEPRECATED:
		return event.CellDeprecated, tokDeprecated
	case gonvml.ERROR_FUNCTION_NOT_FOUND:
		return event.CellAbsent, ""
	}
	if t, ok := otherTokens[r]; ok {
		return event.CellOther, t
	}
	return event.CellOther, "[" + retName(r) + "]"
}

// deadCode reports the returns after which no further call for the GPU
// is worth making in this tick: the GPU fell off the bus, or the driver
// behind the library is gone (nvidia_gpu_exporter treats the same three as
// "driver generation dead").
func deadCode(r gonvml.Return) bool {
	return r == gonvml.ERROR_GPU_IS_LOST || r == gonvml.ERROR_UNINITIALIZED || r == gonvml.ERROR_DRIVER_NOT_LOADED
}

// initHints explains the nvmlInit failures an operator can act on.
var initHints = map[gonvml.Return]string{
	gonvml.ERROR_LIBRARY_NOT_FOUND:       "no libnvidia-ml.so.1: is the NVIDIA driver installed?",
	gonvml.ERROR_DRIVER_NOT_LOADED:       "the NVIDIA kernel driver is not loaded: check `lsmod | grep nvidia` and dmesg",
	gonvml.ERROR_NO_PERMISSION:           "no permission to open the NVIDIA device files (/dev/nvidia*)",
	gonvml.ERROR_LIB_RM_VERSION_MISMATCH: "driver/library version mismatch: reboot, or reload the nvidia kernel module",
	gonvml.ERROR_RESET_REQUIRED:          "a GPU needs a reset (nvidia-smi -r) or a reboot",
	gonvml.ERROR_GPU_IS_LOST:             "a GPU has fallen off the bus: reboot to recover it",
	gonvml.ERROR_IRQ_ISSUE:               "the kernel driver reports an interrupt problem: check dmesg",
	gonvml.ERROR_UNKNOWN:                 "unknown error (in a container, the device cgroup may have lost the GPU)",
	gonvml.ERROR_FUNCTION_NOT_FOUND:      "libnvidia-ml.so.1 lacks nvmlInit: a driver too old for NVML",
}

// initFailed builds the UnavailableError for a failed nvmlInit: "NVML
// init failed: ERROR_LIBRARY_NOT_FOUND (no libnvidia-ml.so.1: is the
// NVIDIA driver installed?)".
func initFailed(r gonvml.Return) *UnavailableError {
	reason := "NVML init failed: " + retName(r)
	if h, ok := initHints[r]; ok {
		reason += " (" + h + ")"
	}
	return &UnavailableError{Reason: reason, Code: int(r)}
}
