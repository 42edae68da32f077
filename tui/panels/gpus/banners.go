package gpus

import (
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The GPU table's notices above it: sampler failures and stale data,
// worded by the sampler that reported them.

// Banners returns the table-level notices, newest first: the sampler's
// failures ("nvidia-smi failed: ..." or "NVML failed: ...", by the
// sampler in use when each was last reported) and stale data.
func (t *Table) Banners(now time.Time) []component.Banner {
	var out []component.Banner
	for i := len(t.failures) - 1; i >= 0; i-- {
		f := t.failures[i]
		var b strings.Builder
		if nvmlMode(f.src) {
			b.WriteString("NVML failed: ")
		} else {
			b.WriteString("nvidia-smi failed: ")
		}
		b.WriteString(string(f.f.Class))
		if f.f.BusID != "" {
			b.WriteString(" bus ")
			b.WriteString(f.f.BusID)
		}
		if f.f.Reason != "" {
			b.WriteString(" (")
			b.WriteString(f.f.Reason)
			b.WriteString(")")
		}
		if f.f.NeedsReboot {
			b.WriteString(", reboot needed")
		}
		if f.count > 1 {
			b.WriteString(", seen ")
			b.WriteString(strconv.Itoa(f.count))
			b.WriteString("x")
		}
		if age := style.Ago(now, f.at); age != "" {
			b.WriteString(", last ")
			b.WriteString(age)
			b.WriteString(" ago")
		}
		out = append(out, component.Banner{Text: b.String(), Tone: style.Crit})
	}
	if t.stale != nil {
		out = append(out, staleBanner(t.stale, t.staleSrc, now))
	}
	return out
}

// staleBanner is "GPUs stale 19s (since 18:12:23): connection to host
// lost; restarting nvidia-smi": the sampler's reason when it gives one,
// else the missed intervals when there are any (never "0 intervals"),
// then what happens next, by the sampler (src, a event.GPUSourceMode) that
// reported it: nvidia-smi's stream is restarted; NVML (a call blocked in
// the driver) and the agent (a blocked call, or a connection the agent
// is started again on) are waited for. The short form leaves out the
// clock time, which the age repeats.
func staleBanner(s *event.GPUStale, src string, now time.Time) component.Banner {
	head := "GPUs stale"
	if age := style.Ago(now, s.LastSample); age != "" {
		head += " " + age
	}
	tail := "; restarting nvidia-smi"
	if nvmlMode(src) {
		tail = "; waiting for " + samplerName(src)
	}
	switch {
	case s.Reason != "":
		tail = ": " + s.Reason + tail
	case s.Missed > 0:
		tail = ": no sample for " + strconv.Itoa(s.Missed) + " intervals" + tail
	}
	if s.LastSample.IsZero() {
		return component.Banner{Text: head + tail, Tone: style.Warn}
	}
	return component.Banner{Text: head + " (since " + s.LastSample.Format("15:04:05") + ")" + tail, Short: head + tail, Tone: style.Warn}
}
