package compare

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// side is one experiment's value of a field: its text, and whether it is
// known (a failed capture is not).
type side struct {
	text  string
	known bool
}

func known(s string) side { return side{sanitize.OneLine(s), true} }

func unknown(why string) side { return side{"unknown: " + sanitize.OneLine(why), false} }

// fieldSet collects the field rows in group order.
type fieldSet struct{ rows []FieldRow }

// add appends a row; same says whether the values are equal (when both
// are known).
func (f *fieldSet) add(group, name string, a, b side, same bool) {
	r := FieldRow{Group: group, Name: sanitize.OneLine(name), A: a.text, B: b.text}
	switch {
	case a.known && b.known:
		r.Changed = !same
	case a.known != b.known:
		r.Unknown = true
	}
	f.rows = append(f.rows, r)
}

// addText appends a row whose values are equal when their texts are.
func (f *fieldSet) addText(group, name string, a, b side) {
	f.add(group, name, a, b, a.text == b.text)
}

// fieldRows lists every fingerprint variable of a and b, changed rows
// first (in group order), then the rest.
func fieldRows(a, b *ledger.Experiment, bench []FieldRow) []FieldRow {
	var f fieldSet
	commitRows(&f, a, b)
	launchRows(&f, a, b)
	f.rows = append(f.rows, bench...)
	versionRows(&f, a, b)
	gpuRows(&f, a, b)
	hostRows(&f, a, b)
	out := make([]FieldRow, 0, len(f.rows))
	for _, changed := range []bool{true, false} {
		for _, g := range fieldGroups {
			for _, r := range f.rows {
				if r.Group == g && r.Changed == changed {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// commitRows: HEAD (short id and subject) and branch; the dirty patch
// (diffstat) and untracked files when both commits are known. Nothing
// when neither side has a repository configured.
func commitRows(f *fieldSet, a, b *ledger.Experiment) {
	ga, gb := a.Git(), b.Git()
	if ga == nil && gb == nil && a.CommitUnknown() == "" && b.CommitUnknown() == "" {
		return // no repository configured on either side
	}
	commit := func(x *ledger.Experiment) (head, branch side) {
		g := x.Git()
		if why := x.CommitUnknown(); why != "" || g == nil || g.Head == "" {
			if why == "" {
				why = "no repository configured"
			}
			return unknown(why), unknown(why)
		}
		h := git.ShortID(sanitize.OneLine(g.Head))
		if g.Subject != "" {
			h += " " + strconv.Quote(sanitize.OneLine(g.Subject))
		}
		return side{h, true}, known(BranchText(g.Branch))
	}
	ha, ba := commit(a)
	hb, bb := commit(b)
	f.add("commit", "HEAD", ha, hb, ha.known && hb.known && ga.Head == gb.Head)
	f.addText("commit", "branch", ba, bb)
	if !ha.known || !hb.known {
		return
	}
	patch := func(x *ledger.Experiment) side {
		if why := x.PatchUnknown(); why != "" {
			return unknown(why)
		}
		g := x.Git()
		if g.PatchBytes == 0 && g.PatchSHA256 == "" {
			return known("clean")
		}
		s := DiffStatSummary(g.Patch)
		if s == "" {
			return known(PatchText(g))
		}
		if g.PatchTruncated {
			s += " (of the stored part)"
		}
		return known(s + " sha256:" + ShortHash(g.PatchSHA256))
	}
	pa, pb := patch(a), patch(b)
	f.add("patch", "dirty patch", pa, pb, pa.known && pb.known && ga.PatchSHA256 == gb.PatchSHA256)
	untracked := func(g *event.GitState) side {
		if len(g.Untracked) == 0 {
			return known("none")
		}
		return known(FilesText(g.Untracked, len(g.Untracked)))
	}
	f.add("patch", "untracked files", untracked(ga), untracked(gb), slices.Equal(ga.Untracked, gb.Untracked))
}

// launchRows: the env profile and each env variable (secrets redacted),
// then the preset and the command line's flags and positional words.
func launchRows(f *fieldSet, a, b *ledger.Experiment) {
	la, lb := a.LaunchInfo(), b.LaunchInfo()
	if la == nil && lb == nil {
		return
	}
	const noLaunch = "no launch recorded"
	get := func(l *event.LaunchInfo, v func(l *event.LaunchInfo) string) side {
		if l == nil {
			return unknown(noLaunch)
		}
		return known(v(l))
	}
	profile := func(x *ledger.Experiment) side {
		if x.LaunchInfo() == nil {
			return unknown(noLaunch)
		}
		return known(x.Profile())
	}
	f.addText("env", "profile", profile(a), profile(b))
	var ea, eb map[string]string
	if la != nil {
		ea = server.Redact(la.Env)
	}
	if lb != nil {
		eb = server.Redact(lb.Env)
	}
	names := slices.Sorted(maps.Keys(ea))
	for _, k := range slices.Sorted(maps.Keys(eb)) {
		if _, ok := ea[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		va := get(la, func(*event.LaunchInfo) string { return ea[k] })
		vb := get(lb, func(*event.LaunchInfo) string { return eb[k] })
		_, ina := ea[k]
		_, inb := eb[k]
		f.add("env", k, va, vb, ina == inb && va.text == vb.text)
	}
	f.addText("flags", "preset", get(la, func(l *event.LaunchInfo) string { return l.Preset }), get(lb, func(l *event.LaunchInfo) string { return l.Preset }))
	var fa, fb []argFlag
	if la != nil {
		fa = parseArgv(server.RedactArgv(la.Argv))
	}
	if lb != nil {
		fb = parseArgv(server.RedactArgv(lb.Argv))
	}
	for _, name := range flagNames(fa, fb) {
		va, ina := flagValue(fa, name)
		vb, inb := flagValue(fb, name)
		sa, sb := get(la, func(*event.LaunchInfo) string { return va }), get(lb, func(*event.LaunchInfo) string { return vb })
		f.add("flags", name, sa, sb, ina == inb && va == vb)
	}
}

// argFlag is one element of a command line: a flag with its value
// ("--tp-size" "8"; "(set)" for a flag without one), or a positional word
// ("arg 1" "python3").
type argFlag struct{ name, value string }

// parseArgv splits argv into flags and positional words: "--name value",
// "--name=value", "-m module"; a flag followed by another flag (or by
// nothing) has no value; a repeated flag is named "--name (2)".
func parseArgv(argv []string) []argFlag {
	var out []argFlag
	seen := map[string]int{}
	pos := 0
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if len(w) < 2 || w[0] != '-' || w == "--" {
			pos++
			out = append(out, argFlag{"arg " + strconv.Itoa(pos), w})
			continue
		}
		name, val, eq := strings.Cut(w, "=")
		if !eq {
			val = "(set)"
			if i+1 < len(argv) && !isFlagWord(argv[i+1]) {
				val = argv[i+1]
				i++
			}
		}
		seen[name]++
		if n := seen[name]; n > 1 {
			name += " (" + strconv.Itoa(n) + ")"
		}
		out = append(out, argFlag{name, val})
	}
	return out
}

// isFlagWord reports whether w is a flag rather than a value: it starts
// with "-" and is not a negative number.
func isFlagWord(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(w, 64)
	return err != nil
}

// flagNames is the union of the names, in a's order then b's new ones.
func flagNames(a, b []argFlag) []string {
	var out []string
	seen := map[string]bool{}
	for _, fs := range [][]argFlag{a, b} {
		for _, f := range fs {
			if !seen[f.name] {
				seen[f.name] = true
				out = append(out, f.name)
			}
		}
	}
	return out
}

func flagValue(fs []argFlag, name string) (string, bool) {
	for _, f := range fs {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

// benchSetting is one setting of a benchmark run that changes what it
// measures, as text.
type benchSetting struct {
	name string
	text func(c *event.BenchConfig) string
}

var benchSettings = []benchSetting{
	{"endpoint", func(c *event.BenchConfig) string {
		if c.Endpoint == "" {
			return string(event.BenchCompletions)
		}
		return string(c.Endpoint)
	}},
	{"input len", func(c *event.BenchConfig) string { return strconv.Itoa(c.InputLen) + " tok" }},
	{"output len", func(c *event.BenchConfig) string { return strconv.Itoa(c.OutputLen) + " tok" }},
	{"concurrency", func(c *event.BenchConfig) string { return strconv.Itoa(c.Concurrency) }},
	{"rate", func(c *event.BenchConfig) string {
		if !(c.Rate > 0) || math.IsInf(c.Rate, 0) {
			return "as fast as possible"
		}
		arrivals := "even"
		if c.Poisson {
			arrivals = "poisson"
		}
		return strconv.FormatFloat(c.Rate, 'g', -1, 64) + " req/s " + arrivals
	}},
	{"prompts", func(c *event.BenchConfig) string {
		if c.PromptFile == "" {
			return "random"
		}
		return c.PromptFile
	}},
}

// benchSettingRows compares the settings of the benchmark runs each side
// pools (a, b: one per launch): one row per setting in group "bench",
// changed when the runs do not all agree — across the sides, or among one
// side's own runs (then that side lists each value, "1, 4 (mixed)"). A
// side without a run is unknown, never changed. Nothing when neither side
// has a run.
func benchSettingRows(a, b []*event.BenchResult) []FieldRow {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	var rows []FieldRow
	for _, st := range benchSettings {
		values := func(rs []*event.BenchResult) []string {
			var out []string
			for _, r := range rs {
				if v := sanitize.OneLine(st.text(&r.Config)); !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
			return out
		}
		va, vb := values(a), values(b)
		text := func(vs []string) string {
			switch len(vs) {
			case 0:
				return "unknown: no clean benchmark run"
			case 1:
				return vs[0]
			}
			return strings.Join(vs, ", ") + " (mixed)"
		}
		r := FieldRow{Group: "bench", Name: st.name, A: text(va), B: text(vb)}
		switch {
		case len(va) == 0 && len(vb) == 0:
		case len(va) == 0 || len(vb) == 0:
			r.Unknown = true // no verdict either way: a side has no run
		default:
			r.Changed = len(va) > 1 || len(vb) > 1 || va[0] != vb[0]
		}
		rows = append(rows, r)
	}
	return rows
}

// versionRows: each version probe, in probe order.
func versionRows(f *fieldSet, a, b *ledger.Experiment) {
	fa, fb := a.Fingerprint, b.Fingerprint
	if fa == nil && fb == nil {
		return
	}
	var names []string
	for _, fp := range []*event.Fingerprint{fa, fb} {
		if fp == nil {
			continue
		}
		for _, v := range fp.Versions {
			if !slices.Contains(names, v.Name) {
				names = append(names, v.Name)
			}
		}
	}
	get := func(fp *event.Fingerprint, name string) side {
		if fp == nil {
			return unknown("no fingerprint captured")
		}
		for _, v := range fp.Versions {
			if v.Name == name {
				if v.Err != "" {
					return unknown(v.Err)
				}
				return known(v.Value)
			}
		}
		return unknown("not probed")
	}
	for _, n := range names {
		f.addText("versions", n, get(fa, n), get(fb, n))
	}
}

// gpuField is one per-GPU row of the gpu group.
type gpuField struct {
	name string
	text func(g *event.GPU) string
}

var gpuFields = []gpuField{
	{"SM clock", func(g *event.GPU) string { return readingText(g.SMClockMHz, 0) + " MHz" }},
	{"mem clock", func(g *event.GPU) string { return readingText(g.MemClockMHz, 0) + " MHz" }},
	{"P-state", func(g *event.GPU) string { return textText(g.PState) }},
	{"PCIe", pcieText},
	{"throttle", func(g *event.GPU) string {
		n, _ := ThrottleReasons(g.ClockEvents)
		if len(n) == 0 {
			return "none"
		}
		return strings.Join(n, "+")
	}},
}

// gpuRows: the GPUs under load (the last sample before each experiment's
// end): their count and name, then per field one row for all GPUs when
// each side's GPUs agree among themselves, else one row per GPU. A GPU
// idle in that sample is not under load: its fields are unknown there.
func gpuRows(f *fieldSet, a, b *ledger.Experiment) {
	if len(a.EndGPUs) == 0 && len(b.EndGPUs) == 0 {
		return
	}
	const none = "no GPU sample before the end"
	count := func(gs []event.GPU) side {
		if len(gs) == 0 {
			return unknown(none)
		}
		// A lost GPU (its handle fails, or it reads "[GPU is lost]") is
		// counted and named once, as GPUStateSummary does.
		names := map[string]bool{}
		var list []string
		var lost []int
		for i := range gs {
			if gs[i].Lost || gs[i].ShowsLost() {
				lost = append(lost, gs[i].Index)
				continue
			}
			if n := textText(gs[i].Name); !names[n] {
				names[n] = true
				list = append(list, n)
			}
		}
		if len(list) == 0 {
			list = []string{"GPU"}
		}
		s := strconv.Itoa(len(gs)) + "x " + strings.Join(list, ", ")
		if len(lost) > 0 {
			s += ", GPU " + IndexRanges(lost) + " lost"
		}
		return known(s)
	}
	ca, cb := count(a.EndGPUs), count(b.EndGPUs)
	f.addText("gpu", "GPUs under load", ca, cb)
	if !ca.known || !cb.known {
		return
	}
	idx := func(gs []event.GPU) []int {
		out := make([]int, len(gs))
		for i := range gs {
			out[i] = gs[i].Index
		}
		return out
	}
	ia, ib := idx(a.EndGPUs), idx(b.EndGPUs)
	all := slices.Clone(ia)
	for _, i := range ib {
		if !slices.Contains(all, i) {
			all = append(all, i)
		}
	}
	slices.Sort(all)
	byIndex := func(gs []event.GPU, i int) *event.GPU {
		for k := range gs {
			if gs[k].Index == i {
				return &gs[k]
			}
		}
		return nil
	}
	// A GPU that was idle at the end (the server killed, or no requests)
	// has no state under load: its clocks, P-state and link width say
	// nothing about the run.
	value := func(g *event.GPU, fd gpuField) side {
		if g.Lost || g.ShowsLost() {
			return unknown("GPU lost")
		}
		if gpuIdle(g) {
			return unknown("idle at the end, not under load")
		}
		return known(fd.text(g))
	}
	uniform := func(gs []event.GPU, fd gpuField) bool {
		for k := range gs {
			if value(&gs[k], fd) != value(&gs[0], fd) {
				return false
			}
		}
		return true
	}
	sameSet := slices.Equal(slices.Sorted(slices.Values(ia)), all) && slices.Equal(slices.Sorted(slices.Values(ib)), all)
	for _, fd := range gpuFields {
		if sameSet && uniform(a.EndGPUs, fd) && uniform(b.EndGPUs, fd) {
			f.addText("gpu", "GPU "+IndexRanges(all)+" "+fd.name, value(&a.EndGPUs[0], fd), value(&b.EndGPUs[0], fd))
			continue
		}
		for _, i := range all {
			get := func(gs []event.GPU) side {
				g := byIndex(gs, i)
				if g == nil {
					return unknown("not in the sample")
				}
				return value(g, fd)
			}
			f.addText("gpu", "GPU "+strconv.Itoa(i)+" "+fd.name, get(a.EndGPUs), get(b.EndGPUs))
		}
	}
}

// gpuIdle reports whether g was idle when sampled: the driver gives the
// GPU-idle clock-event reason, or utilisation was 0.
func gpuIdle(g *event.GPU) bool {
	if g.ClockEvents.Status == event.CellOK && g.ClockEvents.Mask&event.ReasonGPUIdle != 0 {
		return true
	}
	return g.UtilGPUPct.Valid() && g.UtilGPUPct.Value == 0
}

// hostRows: the GPU host's hostname and kernel.
func hostRows(f *fieldSet, a, b *ledger.Experiment) {
	get := func(x *ledger.Experiment, v func(fp *event.Fingerprint) string) side {
		if x.Fingerprint == nil {
			return unknown("no fingerprint captured")
		}
		if s := v(x.Fingerprint); s != "" {
			return known(s)
		}
		return unknown("not captured")
	}
	if a.Fingerprint == nil && b.Fingerprint == nil {
		return
	}
	f.addText("host", "hostname", get(a, func(fp *event.Fingerprint) string { return fp.Hostname }), get(b, func(fp *event.Fingerprint) string { return fp.Hostname }))
	f.addText("host", "kernel", get(a, func(fp *event.Fingerprint) string { return fp.Kernel }), get(b, func(fp *event.Fingerprint) string { return fp.Kernel }))
}
