package gpu

import (
	"bytes"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"strings"
)

// Whole-command failure messages of nvidia-smi. The tool prints one of these
// on stdout (sometimes stderr) instead of its output and exits non-zero;
// the formats are from public bug reports (see
// research-notes/nvidia-smi-real-outputs.md §A).
var (
	prefUnable      = []byte("Unable to ")                    // then "determine" (Linux) or "detect" (Windows)
	midHandle       = []byte(" the device handle for GPU")    // then an optional space and the bus id
	prefNoDevices   = []byte("No devices were found")         // driver loaded, no usable GPU
	prefSMIFailed   = []byte("NVIDIA-SMI has failed because") // driver not reachable
	prefNVMLInit    = []byte("Failed to initialize NVML:")    // NVML could not start
	prefNVMLVersion = []byte("NVML library version:")         // the line after a version mismatch
)

const (
	maxFailureLine = 512 // bytes of Failure.Line kept
	maxReasonLen   = 200 // bytes of Failure.Reason kept
	maxClassLen    = 48  // bytes of a class made from a reason
)

// ClassifyFailure recognises one line of a whole-command nvidia-smi failure:
//
//	Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error
//	Unable to detect the device handle for GPU0000:B1:00.0: Unknown Error   (Windows, no space)
//	Unable to determine the device handle for GPU 0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU
//	No devices were found
//	NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. …
//	Failed to initialize NVML: Driver/library version mismatch
//	Failed to initialize NVML: Unknown Error
//
// The device-handle message gives the bus id and a reason; "GPU is lost"
// (any spacing, any case) is class gpu-lost with NeedsReboot, any other
// reason becomes its kebab case ("Unknown Error" → "unknown-error", "Not
// Found" → "not-found"). "Failed to initialize NVML: <other>" becomes
// "nvml-init-<kebab reason>". A driver/library mismatch is followed on newer
// drivers by "NVML library version: 570.124"; read it with ParseNVMLVersion.
// Leading and trailing white space is ignored. ok is false for any other
// line. It allocates only when it matches.
func ClassifyFailure(line []byte) (f event.GPUFailure, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return event.GPUFailure{}, false
	}
	switch line[0] {
	case 'U':
		return deviceHandleFailure(line)
	case 'N':
		if bytes.Equal(line, prefNoDevices) || bytes.HasPrefix(line, prefNoDevices) && line[len(prefNoDevices)] == '.' {
			return newFailure(event.GPUFailNoDevices, "", "", line), true
		}
		if rest, ok := bytes.CutPrefix(line, prefSMIFailed); ok {
			// "…because it couldn't communicate with the NVIDIA driver. Make sure …":
			// the reason is the first sentence.
			reason := bytes.TrimSpace(rest)
			if i := bytes.Index(reason, []byte(". ")); i > 0 {
				reason = reason[:i]
			}
			reason = bytes.TrimSuffix(reason, []byte("."))
			return newFailure(event.GPUFailDriverNotLoaded, "", cleanText(reason, maxReasonLen), line), true
		}
	case 'F':
		if rest, ok := bytes.CutPrefix(line, prefNVMLInit); ok {
			reason := cleanText(bytes.TrimSpace(rest), maxReasonLen)
			class := event.GPUFailureClass("nvml-init-" + kebab(reason))
			switch {
			case strings.EqualFold(reason, "Driver/library version mismatch"):
				class = event.GPUFailDriverLibraryMismatch
			case strings.EqualFold(reason, "Unknown Error"):
				class = event.GPUFailNVMLInitUnknown
			case class == "nvml-init-":
				class = "nvml-init-failed" // no words in the reason
			}
			return newFailure(class, "", reason, line), true
		}
	}
	return event.GPUFailure{}, false
}

// deviceHandleFailure parses "Unable to (determine|detect) the device handle
// for GPU[ ]<bus id>: <reason>".
func deviceHandleFailure(line []byte) (event.GPUFailure, bool) {
	rest, ok := bytes.CutPrefix(line, prefUnable)
	if !ok {
		return event.GPUFailure{}, false
	}
	if r, ok := bytes.CutPrefix(rest, []byte("determine")); ok {
		rest = r
	} else if r, ok := bytes.CutPrefix(rest, []byte("detect")); ok {
		rest = r
	} else {
		return event.GPUFailure{}, false
	}
	if rest, ok = bytes.CutPrefix(rest, midHandle); !ok {
		return event.GPUFailure{}, false
	}
	rest = bytes.TrimLeft(rest, " ")
	// The bus id runs to the first ": " (bus ids contain ':' themselves).
	i := bytes.Index(rest, []byte(": "))
	if i < 0 {
		if !bytes.HasSuffix(rest, []byte(":")) {
			return event.GPUFailure{}, false
		}
		i = len(rest) - 1
	}
	bus := rest[:i]
	if len(bus) == 0 {
		return event.GPUFailure{}, false
	}
	for _, c := range bus {
		if !isBusIDByte(c) {
			return event.GPUFailure{}, false
		}
	}
	reason := ""
	if i+2 <= len(rest) {
		reason = cleanText(bytes.TrimSpace(rest[i+2:]), maxReasonLen)
	}
	if isGPULost(reason) {
		f := newFailure(event.GPUFailLost, string(bus), reason, line)
		f.NeedsReboot = true
		return f, true
	}
	class := event.GPUFailureClass(kebab(reason))
	if class == "" {
		class = "device-handle-failed"
	}
	return newFailure(class, string(bus), reason, line), true
}

func isBusIDByte(c byte) bool {
	return c == ':' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isGPULost matches "GPU is lost. Reboot the system to recover this GPU"
// with any case and any run of white space between words.
func isGPULost(reason string) bool {
	words := strings.Fields(strings.ToLower(reason))
	return len(words) >= 3 && words[0] == "gpu" && words[1] == "is" && strings.TrimSuffix(words[2], ".") == "lost"
}

func newFailure(c event.GPUFailureClass, bus, reason string, line []byte) event.GPUFailure {
	return event.GPUFailure{Class: c, BusID: bus, Reason: reason, Line: cleanText(line, maxFailureLine)}
}

// kebab turns a reason into a class name: lower case, runs of anything but
// letters and digits become one '-', cut at the first sentence end and to
// maxClassLen bytes at a word boundary. "Unknown Error" → "unknown-error".
func kebab(reason string) string {
	if i := strings.Index(reason, ". "); i > 0 {
		reason = reason[:i]
	}
	b := make([]byte, 0, len(reason))
	for _, r := range strings.ToLower(reason) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b = append(b, byte(r))
		} else if len(b) > 0 && b[len(b)-1] != '-' {
			b = append(b, '-')
		}
	}
	s := strings.TrimSuffix(string(b), "-")
	if len(s) > maxClassLen {
		s = s[:maxClassLen]
		if i := strings.LastIndexByte(s, '-'); i > 0 {
			s = s[:i]
		}
	}
	return s
}

// ParseNVMLVersion reads the line newer drivers print after "Failed to
// initialize NVML: Driver/library version mismatch":
// "NVML library version: 570.124" → "570.124". ok is false for any other
// line.
func ParseNVMLVersion(line []byte) (version string, ok bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), prefNVMLVersion)
	if !ok {
		return "", false
	}
	v := bytes.TrimSpace(rest)
	if len(v) == 0 || len(v) > 32 {
		return "", false
	}
	for _, c := range v {
		if !(c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return "", false
		}
	}
	return string(v), true
}
