package experiments

import (
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The fingerprint's lines in the details: the checkout, the versions and
// the GPUs at an experiment's start, each summed up on one line.

// gitSummary is "main a6d51c0 \"subject\"; dirty patch 3f2a9c1e0b12
// (12.3 kB); 2 untracked; 1 stash", or why there is none.
func gitSummary(g *event.GitState) string {
	if g == nil {
		return "no repository"
	}
	var parts []string
	head := git.ShortID(sanitize.Name(g.Head))
	if g.Branch != "" {
		head = sanitize.Name(g.Branch) + " " + head
	}
	if s := sanitize.Name(g.Subject); s != "" {
		head += ` "` + style.Truncate(s, 50) + `"`
	}
	parts = append(parts, head)
	if g.PatchBytes > 0 {
		p := "dirty patch " + style.Truncate(sanitize.String(g.PatchSHA256), 12) + " (" + compare.FormatBytes(int64(g.PatchBytes))
		if g.PatchTruncated {
			p += ", stored cut"
		}
		parts = append(parts, p+")")
	} else {
		parts = append(parts, "clean")
	}
	if n := len(g.Untracked); n > 0 {
		parts = append(parts, strconv.Itoa(n)+" untracked")
	}
	if n := len(g.Stashes); n > 0 {
		parts = append(parts, style.Plural(n, "stash"))
	}
	return strings.Join(parts, "; ")
}

// versionsSummary is "driver 570.86  cuda 12.8  torch failed (timed out
// after 10s)".
func versionsSummary(vs []event.Version) string {
	var parts []string
	for _, v := range vs {
		name := sanitize.String(v.Name)
		if v.Err != "" {
			parts = append(parts, name+" failed ("+sanitize.FirstLine(v.Err)+")")
			continue
		}
		parts = append(parts, component.JoinWords(name, sanitize.FirstLine(v.Value)))
	}
	if len(parts) == 0 {
		return "none recorded"
	}
	return strings.Join(parts, "  ")
}

// gpuSummary sums up the GPUs at an experiment's start: "8x NVIDIA H200
// SM 1980 MHz mem 3201 MHz PCIe Gen5 x16 P0 persistence Enabled",
// ranges where they differ ("SM 1410-1980 MHz"), throttle reasons when
// any is active. A lost GPU (its handle failed, or it read "[GPU is
// lost]") is counted under the name it had and named after the counts
// ("16x NVIDIA H200, GPU 2 lost"); one whose name was never read counts
// in the total only ("16 GPUs: 15x NVIDIA H200, GPU 2 lost").
func gpuSummary(gs []event.GPU) string {
	if len(gs) == 0 {
		return "none recorded"
	}
	var names []string
	var lost []int
	unnamed := false
	count := map[string]int{}
	for _, g := range gs {
		isLost := g.Lost || g.ShowsLost()
		if isLost {
			lost = append(lost, g.Index)
		}
		n := sanitize.String(g.Name.S)
		if n == "" && isLost {
			unnamed = true
			continue
		}
		if n == "" {
			n = "GPU"
		}
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	var counts []string
	for _, n := range names {
		counts = append(counts, strconv.Itoa(count[n])+"x "+n)
	}
	if len(lost) > 0 {
		counts = append(counts, "GPU "+compare.IndexRanges(lost)+" lost")
	}
	head := strings.Join(counts, ", ")
	if unnamed {
		total := strconv.Itoa(len(gs)) + " GPUs: "
		if len(gs) == 1 {
			total = "1 GPU: "
		}
		head = total + head
	}
	parts := []string{head}
	rng := func(f func(event.GPU) event.Reading) string {
		lo, hi, ok := 0.0, 0.0, false
		for _, g := range gs {
			r := f(g)
			if !r.Valid() {
				continue
			}
			if !ok || r.Value < lo {
				lo = r.Value
			}
			if !ok || r.Value > hi {
				hi = r.Value
			}
			ok = true
		}
		if !ok {
			return ""
		}
		s := strconv.FormatFloat(lo, 'f', 0, 64)
		if hi != lo {
			s += "-" + strconv.FormatFloat(hi, 'f', 0, 64)
		}
		return s
	}
	if s := rng(func(g event.GPU) event.Reading { return g.SMClockMHz }); s != "" {
		parts = append(parts, "SM "+s+" MHz")
	}
	if s := rng(func(g event.GPU) event.Reading { return g.MemClockMHz }); s != "" {
		parts = append(parts, "mem "+s+" MHz")
	}
	gen := rng(func(g event.GPU) event.Reading { return g.PCIeGenCurrent })
	width := rng(func(g event.GPU) event.Reading { return g.PCIeWidthCurrent })
	if gen != "" || width != "" {
		parts = append(parts, "PCIe"+prefixed(" Gen", gen)+prefixed(" x", width))
	}
	texts := func(f func(event.GPU) event.Text) string {
		var vs []string
		for _, g := range gs {
			if t := f(g); t.Status == event.CellOK && t.S != "" && !slices.Contains(vs, sanitize.String(t.S)) {
				vs = append(vs, sanitize.String(t.S))
			}
		}
		return strings.Join(vs, "/")
	}
	if s := texts(func(g event.GPU) event.Text { return g.PState }); s != "" {
		parts = append(parts, s)
	}
	if s := texts(func(g event.GPU) event.Text { return g.Persistence }); s != "" {
		parts = append(parts, "persistence "+s)
	}
	if s := texts(func(g event.GPU) event.Text { return g.ECCMode }); s != "" {
		parts = append(parts, "ECC "+s)
	}
	var mask event.ClockEventReason
	for _, g := range gs {
		if g.ClockEvents.Status == event.CellOK {
			mask |= g.ClockEvents.Mask
		}
	}
	if mask&^event.ReasonGPUIdle != 0 {
		parts = append(parts, "throttle "+throttleNames(mask&^event.ReasonGPUIdle))
	}
	return strings.Join(parts, "  ")
}

// throttleNames lists the clock event reasons in mask: "sw-power,hw-slowdown".
func throttleNames(mask event.ClockEventReason) string {
	names := []struct {
		r event.ClockEventReason
		s string
	}{
		{event.ReasonApplicationsClocks, "app-clocks"}, {event.ReasonSWPowerCap, "sw-power"}, {event.ReasonHWSlowdown, "hw-slowdown"},
		{event.ReasonSyncBoost, "sync-boost"}, {event.ReasonSWThermalSlowdown, "sw-thermal"}, {event.ReasonHWThermalSlowdown, "hw-thermal"},
		{event.ReasonHWPowerBrakeSlowdown, "power-brake"}, {event.ReasonDisplayClockSetting, "display"},
	}
	var out []string
	for _, n := range names {
		if mask&n.r != 0 {
			out = append(out, n.s)
		}
	}
	if len(out) == 0 {
		return "0x" + strconv.FormatUint(uint64(mask), 16)
	}
	return strings.Join(out, ",")
}
