package tui

import (
	"strings"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
)

// How GPUs are sampled (gpu.Source), for the header and the help screen.

// gpuSource is the latest gpu.Source, sanitised.
type gpuSource struct {
	has      bool
	mode     string // "nvml", "agent", "nvidia-smi", or what the event said
	detail   string // "NVML 12.550.54.15, driver 550.54.15"
	fallback string // why not NVML or the agent; "" when nvidia-smi was asked for
}

func (s *gpuSource) set(p gpu.Source) {
	*s = gpuSource{has: true, mode: sanitizeString(string(p.Mode)), detail: sanitizeString(p.Detail), fallback: sanitizeString(p.Fallback)}
	if s.mode == "" {
		s.mode = "?"
	}
}

// shortReason is the first clause of a fallback reason: "host is
// linux/arm64, this binary linux/amd64" is "host is linux/arm64". A
// reason's head says what went wrong; the rest is in the help screen.
func shortReason(r string) string {
	if i := strings.IndexAny(r, ",;("); i > 0 {
		return strings.TrimSpace(r[:i])
	}
	return r
}

// seg is the header field: "GPU nvml", "GPU agent" or "GPU nvidia-smi",
// which give way to every other field (at 80 columns they are not shown:
// the help screen says it); or with a fallback, "GPU nvidia-smi (host is
// linux/arm64)" in the warning tone, which other fields make room for,
// shortened to "GPU nvidia-smi" before the header drops it. ok is false
// before any gpu.Source arrived (a journal recorded before them).
func (s *gpuSource) seg() (seg, bool) {
	if !s.has {
		return seg{}, false
	}
	t := "GPU " + s.mode
	if s.fallback == "" {
		return seg{text: t, prio: prioSampler, yields: true}, true
	}
	full := t + " (" + shortReason(s.fallback) + ")"
	return seg{text: full, short: t, tone: toneWarn, prio: prioSampler}, true
}

// helpLine is what the help screen says about GPU sampling, whole (the
// header's reason is cut): "GPUs: nvidia-smi; NVML not used: host is
// linux/arm64, this binary linux/amd64". "" before any gpu.Source.
func (s *gpuSource) helpLine() string {
	if !s.has {
		return ""
	}
	var b strings.Builder
	b.WriteString("GPUs sampled by ")
	switch s.mode {
	case string(gpu.SourceNVML):
		b.WriteString("NVML in flightdeck")
	case string(gpu.SourceAgent):
		b.WriteString("NVML in the flightdeck agent on the host")
	default:
		b.WriteString(s.mode)
	}
	if s.detail != "" {
		b.WriteString(" (" + s.detail + ")")
	}
	if s.fallback != "" {
		b.WriteString("; NVML not used: " + s.fallback)
	}
	return b.String()
}
