package gpu

import (
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"testing"
)

func TestClassifyFailure(t *testing.T) {
	cases := []struct {
		line   string
		class  event.GPUFailureClass
		bus    string
		reason string
		reboot bool
	}{
		// research-notes §A1: with and without a space after "GPU", the Windows verb.
		{"Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error", "unknown-error", "0000:0B:00.0", "Unknown Error", false},
		{"Unable to determine the device handle for GPU0000:65:00.0: Unknown Error", "unknown-error", "0000:65:00.0", "Unknown Error", false},
		{"Unable to detect the device handle for GPU0000:B1:00.0: Unknown Error", "unknown-error", "0000:B1:00.0", "Unknown Error", false},
		{"Unable to determine the device handle for GPU 000:BA:80.0: Unknown Error", "unknown-error", "000:BA:80.0", "Unknown Error", false},
		{"Unable to determine the device handle for GPU 0000:17:00.0: Not Found", "not-found", "0000:17:00.0", "Not Found", false},
		{"Unable to determine the device handle for GPU 0000:17:00.0: Insufficient Permissions\r\n", "insufficient-permissions", "0000:17:00.0", "Insufficient Permissions", false},
		// §A2: GPU is lost, one and two spaces.
		{"Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost. Reboot the system to recover this GPU", event.GPUFailLost, "0000:01:00.0", "GPU is lost. Reboot the system to recover this GPU", true},
		{"Unable to determine the device handle for GPU 0000:0A:00.0: GPU is lost.  Reboot the system to recover this GPU", event.GPUFailLost, "0000:0A:00.0", "GPU is lost.  Reboot the system to recover this GPU", true},
		// §A5–A8.
		{"No devices were found", event.GPUFailNoDevices, "", "", false},
		{"  No devices were found  ", event.GPUFailNoDevices, "", "", false},
		{"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.", event.GPUFailDriverNotLoaded, "", "it couldn't communicate with the NVIDIA driver", false},
		{"NVIDIA-SMI has failed because it couldn‘t communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.", event.GPUFailDriverNotLoaded, "", "it couldn‘t communicate with the NVIDIA driver", false},
		{"Failed to initialize NVML: Driver/library version mismatch", event.GPUFailDriverLibraryMismatch, "", "Driver/library version mismatch", false},
		{"Failed to initialize NVML: Unknown Error", event.GPUFailNVMLInitUnknown, "", "Unknown Error", false},
		{"Failed to initialize NVML: Insufficient Permissions", "nvml-init-insufficient-permissions", "", "Insufficient Permissions", false},
	}
	for _, c := range cases {
		f, ok := ClassifyFailure([]byte(c.line))
		if !ok {
			t.Errorf("%q: not classified", c.line)
			continue
		}
		if f.Class != c.class || f.BusID != c.bus || f.Reason != c.reason || f.NeedsReboot != c.reboot {
			t.Errorf("%q:\n got %+v\nwant class %q bus %q reason %q reboot %v", c.line, f, c.class, c.bus, c.reason, c.reboot)
		}
		if f.Line == "" || f.NVMLVersion != "" {
			t.Errorf("%q: Line %q NVMLVersion %q", c.line, f.Line, f.NVMLVersion)
		}
	}
}

func TestClassifyFailureRejects(t *testing.T) {
	for _, line := range []string{
		"",
		"0, NVIDIA H200, 00000000:18:00.0, 97",
		"Unable to open file",
		"Unable to determine the device handle for GPU: Unknown Error",
		"Unable to determine the device handle for GPU zz:00.0: Unknown Error",
		"No devices were foundational",
		"NVML library version: 570.124",
		"Failed to initialize something else",
		"NVIDIA H200, 5",
	} {
		if f, ok := ClassifyFailure([]byte(line)); ok {
			t.Errorf("%q classified as %+v", line, f)
		}
	}
}

func TestParseNVMLVersion(t *testing.T) {
	if v, ok := ParseNVMLVersion([]byte("NVML library version: 570.124\r")); !ok || v != "570.124" {
		t.Errorf("got %q %v", v, ok)
	}
	for _, l := range []string{"NVML library version:", "NVML library version: 5 7", "NVML version : 590.48", "NVML library version: \x1b[1m"} {
		if v, ok := ParseNVMLVersion([]byte(l)); ok {
			t.Errorf("%q → %q", l, v)
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{
		"Unknown Error":           "unknown-error",
		"Not Found":               "not-found",
		"  GPU requires reset. x": "gpu-requires-reset",
		"Timeout!":                "timeout",
		"a very long reason that goes on and on well past the limit of the class": "a-very-long-reason-that-goes-on-and-on-well",
	} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}
