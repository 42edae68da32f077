package gpus

import (
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// How GPUs are sampled (event.GPUSource): the header's field, the help
// screen's lines, the log line when it changes, and the words the table
// and its banners use for the sampler.

// source is the latest event.GPUSource, sanitised.
type source struct {
	has       bool
	mode      string // "nvml", "agent", "nvidia-smi", or what the event said
	detail    string // "NVML 12.550.54.15, driver 550.54.15"
	fallback  string // why not NVML or the agent; "" when nvidia-smi was asked for
	simulated bool   // detail says the NVML is the simulated host's fake one
}

func (s *source) set(p event.GPUSource) {
	*s = source{has: true, mode: sanitize.String(string(p.Mode)), detail: sanitize.String(p.Detail), fallback: sanitize.String(p.Fallback)}
	if s.mode == "" {
		s.mode = "?"
	}
	// probes/agent's Runner starts the detail with "simulated NVML" when
	// the agent samples the simulated host's fake library.
	s.simulated = strings.HasPrefix(s.detail, "simulated")
}

// samplerName names a sampler (a event.GPUSourceMode) in a sentence:
// "nvidia-smi", "NVML", "the agent"; nvidia-smi when unknown (a journal
// recorded before event.GPUSource events, when nvidia-smi was the only one).
func samplerName(mode string) string {
	switch mode {
	case string(event.SourceNVML):
		return "NVML"
	case string(event.SourceAgent):
		return "the agent"
	case "", "?":
		return "nvidia-smi"
	}
	return mode
}

// nvmlMode reports whether a sampler reads NVML (in flightdeck or in the
// agent): its failures and lost GPUs are NVML's return codes, not
// nvidia-smi's text.
func nvmlMode(mode string) bool {
	return mode == string(event.SourceNVML) || mode == string(event.SourceAgent)
}

// shortReason is the first clause of a fallback reason, cut at its first
// ':', ',', ';' or '(': "host is linux/arm64, this binary linux/amd64" is
// "host is linux/arm64", "agent exited: exit status 1" is "agent
// exited". A reason's head says what went wrong; the rest is in the help
// screen.
func shortReason(r string) string {
	if i := strings.IndexAny(r, ":,;("); i > 0 {
		return strings.TrimSpace(r[:i])
	}
	return r
}

// Field is the header's field about GPU sampling: its text, a shorter
// form ("" when none) and its tone. Fallback says GPUs are sampled by
// nvidia-smi because NVML or the agent failed: the header ranks it above
// a field saying all is well.
type Field struct {
	Text, Short string
	Tone        style.Token
	Fallback    bool
}

// HeaderField is the header's field: "GPU nvml", "GPU agent" or "GPU
// nvidia-smi" ("GPU agent (simulated)" on the simulated host, "GPU agent"
// short); or with a fallback, "GPU nvidia-smi (agent exited)" in the
// warning tone, "GPU nvidia-smi" short (the help screen has the whole
// reason). ok is false before any event.GPUSource arrived (a journal
// recorded before them).
func (p *Panel) HeaderField() (f Field, ok bool) {
	s := &p.source
	if !s.has {
		return Field{}, false
	}
	t := "GPU " + s.mode
	if s.fallback == "" {
		if s.simulated {
			return Field{Text: t + " (simulated)", Short: t}, true
		}
		return Field{Text: t}, true
	}
	full := t + " (" + shortReason(s.fallback) + ")"
	return Field{Text: full, Short: t, Tone: style.Warn, Fallback: true}, true
}

// SamplingHelp is what the help screen says about GPU sampling in w
// cells, whole (the header's reason is cut): "GPUs sampled by NVML in the
// flightdeck agent on the host (simulated NVML, agent ..., driver ...
// (uploaded))" on one row when it fits, else the detail on rows of its
// own under "GPUs sampled by ...:" (never a lone word left over); with a
// fallback, "NVML not used: host is linux/arm64, this binary
// linux/amd64" in the warning tone. None before any event.GPUSource.
func (p *Panel) SamplingHelp(st *style.Styles, w int) []string {
	s := &p.source
	if !s.has {
		return nil
	}
	tn := st.Text
	if s.fallback != "" {
		tn = st.Warn
	}
	head := "GPUs sampled by "
	switch s.mode {
	case string(event.SourceNVML):
		head += "NVML in flightdeck"
	case string(event.SourceAgent):
		head += "NVML in the flightdeck agent on the host"
	default:
		head += s.mode
	}
	var rows []string
	switch one := head + " (" + s.detail + ")"; {
	case s.detail == "":
		rows = append(rows, head)
	case style.Width(one) <= w:
		rows = append(rows, one)
	default:
		rows = append(rows, head+":")
		for _, row := range wrapEven(s.detail, w-2) {
			rows = append(rows, "  "+row)
		}
	}
	if s.fallback != "" {
		rows = append(rows, wrapEven("NVML not used: "+s.fallback, w)...)
	}
	for i, row := range rows {
		rows[i] = tn.Render(style.Truncate(row, w))
	}
	return rows
}

// SetSource applies a event.GPUSource reported at data time at: the
// header's field, the help screen and the table's wording follow it, and
// when GPUs were sampled another way before (not for the first one), a
// line of the log says so at its place among the server's lines
// (sourceLine).
func (p *Panel) SetSource(s event.GPUSource, at time.Time, log *logtail.Tail) {
	prev := p.source
	p.source.set(s)
	p.src = p.source.mode
	if !prev.has || prev.mode == p.source.mode {
		return
	}
	log.AddOwn(sourceLine(&prev, &p.source, at))
}

// sourceLine is the log panel's line for a change of sampler from prev to
// cur at data time at, from the events alone (a replay that seeks sees
// the same line): "[2026-11-30 08:34:47] flightdeck: GPU sampling
// switched to nvidia-smi (agent exited: exit status 1): Xids are not
// reported" as a warning; "... switched to the agent (agent 0.8.0, NVML
// 12.550.54.15, driver 550.54.15 (uploaded)): Xids are reported" back.
func sourceLine(prev, cur *source, at time.Time) (string, logtail.Kind) {
	var b strings.Builder
	writeStamp(&b, at)
	b.WriteString("flightdeck: GPU sampling switched to ")
	switch cur.mode {
	case string(event.SourceNVML):
		b.WriteString("NVML in flightdeck")
	case string(event.SourceAgent):
		b.WriteString("the agent")
	default:
		b.WriteString(cur.mode)
	}
	why := cur.detail
	if cur.fallback != "" {
		why = cur.fallback
	}
	if why != "" {
		b.WriteString(" (" + why + ")")
	}
	switch {
	case !nvmlMode(cur.mode):
		// Only NVML's event set reports Xids.
		b.WriteString(": Xids are not reported")
		return b.String(), logtail.LineOwnWarn
	case !nvmlMode(prev.mode):
		b.WriteString(": Xids are reported")
	}
	return b.String(), logtail.LineMarker
}

// wrapEven wraps s at word boundaries in rows of at most w cells, as few
// rows as wrapWords makes, but as even as they can be: no word is left
// alone on the last row when the rows above could take it.
func wrapEven(s string, w int) []string {
	rows := style.Wrap(s, w)
	if len(rows) < 2 {
		return rows
	}
	// The narrowest width that needs no more rows.
	lo, hi := 1, w
	for lo < hi {
		mid := (lo + hi) / 2
		if len(style.Wrap(s, mid)) <= len(rows) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return style.Wrap(s, lo)
}
