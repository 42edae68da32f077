package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// The experiments panel (x) takes the log tail's place like the git
// panel: one row per experiment of the session (id, name, commit, profile,
// tok/s median with its 95 % interval, samples, delta against the first
// experiment with a result, and how it ended), a cursor over them, and
// below the rows the selected experiment's hypothesis, conclusion, result,
// fingerprint and notes. It draws only what the ledger folded from
// events, so a replay shows it as it was.

// toggleExperiments opens the panel (closing the git panel) or closes it.
func (m *Model) toggleExperiments() {
	if m.exp.open {
		m.exp.open = false
		return
	}
	m.exp.open = true
	m.showHelp = false
	if m.git.Open {
		m.git.Close()
	}
}

// count is the number of experiments.
func (x *expState) count() int { return len(x.ledger.Experiments()) }

// sel is the selected experiment's index: the newest until the user
// moves the cursor; -1 when there are none.
func (x *expState) sel() int {
	n := x.count()
	if !x.touched {
		return n - 1
	}
	return style.Clamp(x.cursor, 0, n-1)
}

// move moves the cursor by d rows, clamped.
func (x *expState) move(d int) {
	x.cursor = style.Clamp(x.sel()+d, 0, x.count()-1)
	x.touched = true
}

// page is how far pgup/pgdn move the cursor.
func (x *expState) page() int { return max(x.height-1, 1) }

// expFooter is the footer while the panel has the screen.
func (m *Model) expFooter(width int) string {
	k := &m.keys
	type item struct {
		key, desc string
		b         *component.Binding
	}
	items := []item{
		{k.Help.Help().Key, k.Help.Help().Desc, &k.Help},
		{"up/down", "select", nil},
		{k.Mark.Help().Key, k.Mark.Help().Desc, &k.Mark},
		{k.Compare.Help().Key, k.Compare.Help().Desc, &k.Compare},
		{k.Baseline.Help().Key, k.Baseline.Help().Desc, &k.Baseline},
		{k.Conclude.Help().Key, k.Conclude.Help().Desc, &k.Conclude},
		{k.Experiment.Help().Key, k.Experiment.Help().Desc, &k.Experiment},
		{k.Note.Help().Key, k.Note.Help().Desc, &k.Note},
	}
	// Closing and quitting always show; the others while they fit, in
	// order.
	last := []item{{k.Experiments.Help().Key + "/esc", "close", nil}, {k.Quit.Help().Key, k.Quit.Help().Desc, &k.Quit}}
	used := -2
	for _, it := range last {
		used += component.HintWidth(it.key, it.desc)
	}
	var b strings.Builder
	for _, it := range items {
		pw := component.HintWidth(it.key, it.desc)
		if used+pw > width {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.keyHint(it.key, it.desc, it.b))
		used += pw
	}
	for _, it := range last {
		if b.Len() > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.keyHint(it.key, it.desc, it.b))
	}
	return style.TruncateStyled(b.String(), width)
}

// expRow is one experiment's row, its cells plain and sanitised.
type expRow struct {
	id, name, commit, profile, rate, n, delta, state string
	stTone                                           style.Token
}

// expResult is an experiment's result: the provisional one while it is
// open (cached per ledger change), else the final one.
func (m *Model) expResultOf(e *ledger.Experiment) event.ExperimentResult {
	if e.Open() && m.exp.ledger.Current() == e {
		return m.exp.provisional()
	}
	return e.Result
}

// expRows are the panel's rows and the baseline's id: the one marked
// with B, else the first experiment with a result ("" when none has one).
func (m *Model) expRows() ([]expRow, string) {
	exps := m.exp.ledger.Experiments()
	base, baseID := m.implicitBase()
	if b := m.exp.ledger.Baseline(); b != nil {
		base, baseID = 0, b.ID
		if r := m.expResultOf(b); r.N > 0 && r.Median > 0 {
			base = r.Median
		}
	}
	baseID = sanitize.String(baseID)
	rows := make([]expRow, len(exps))
	for i := range exps {
		e := &exps[i]
		r := m.expResultOf(e)
		row := expRow{id: sanitize.String(e.ID), name: sanitize.String(e.Name), commit: "-", profile: "-", rate: "-", n: strconv.Itoa(r.N), delta: "-"}
		if fp := e.Fingerprint; fp != nil && fp.Git != nil && fp.Git.Head != "" {
			row.commit = git.ShortID(sanitize.String(fp.Git.Head))
			if fp.Git.PatchBytes > 0 || len(fp.Git.Untracked) > 0 {
				row.commit += "+" // dirty
			}
		}
		if p := expProfile(e); p != "" {
			row.profile = p
		}
		if r.N > 0 {
			row.rate = medianText(r) + " " + intervalText(r)
			switch {
			case row.id == baseID:
				row.delta = "base"
			case base > 0:
				row.delta = deltaText(r.Median, base)
			}
		}
		if e.Open() {
			row.state, row.stTone = "open", style.OK
		} else {
			row.state, row.stTone = endedHow(e.EndedBy), style.Dim
			switch e.EndedBy {
			case event.TriggerExit:
				row.stTone = style.Warn
			case "": // a start came with no end before it: the cockpit crashed
				row.state, row.stTone = "end lost", style.Warn
			}
		}
		rows[i] = row
	}
	return rows, baseID
}

// expProfile is the env profile of an experiment's launch, sanitised.
func expProfile(e *ledger.Experiment) string {
	switch {
	case e.Launch != nil && e.Launch.Profile != "":
		return sanitize.String(e.Launch.Profile)
	case e.Fingerprint != nil && e.Fingerprint.Launch != nil:
		return sanitize.String(e.Fingerprint.Launch.Profile)
	}
	return ""
}

// renderExperiments draws the panel in h lines: its title, the rows (a
// window around the cursor) and the selected experiment's details.
func (m *Model) renderExperiments(lines []string, w, h int) []string {
	if h <= 0 {
		return lines
	}
	st := &m.styles
	x := &m.exp
	rows, baseID := m.expRows()
	bh := h - 1
	// The rows get up to half the area (all of them when they fit), the
	// details the rest; the window keeps the cursor in view.
	vis, cur := 0, x.sel()
	if len(rows) > 0 && bh > 0 {
		vis = min(len(rows), max(1, bh/2-1))
		if len(rows)+1 <= bh/2 {
			vis = len(rows)
		}
		x.height = vis
		x.top = style.Clamp(x.top, 0, len(rows)-vis)
		if cur < x.top {
			x.top = cur
		}
		if cur >= x.top+vis {
			x.top = cur - vis + 1
		}
	}
	var tail []component.TitlePart
	if n := len(rows); n > 0 {
		count := "  " + style.Plural(n, "experiment")
		if vis > 0 && vis < n {
			// Rows above or below the window: which ones show.
			count = "  " + strconv.Itoa(x.top+1) + "-" + strconv.Itoa(x.top+vis) + "/" + style.Plural(n, "experiment")
		}
		tail = append(tail, component.TitlePart{Text: count, Tone: st.Dim})
		if cur := x.ledger.Current(); cur != nil {
			tail = append(tail, component.TitlePart{Text: "  " + sanitize.String(cur.ID) + " open", Tone: st.OK})
		}
		switch {
		case m.exp.ledger.Baseline() != nil:
			tail = append(tail, component.TitlePart{Text: "  delta vs " + baseID + " (baseline)", Tone: st.Dim})
		case baseID != "":
			tail = append(tail, component.TitlePart{Text: "  delta vs " + baseID, Tone: st.Dim})
		}
		if n := len(x.marked); n > 0 {
			tail = append(tail, component.TitlePart{Text: "  " + strconv.Itoa(n) + " marked", Tone: st.Accent})
		}
	}
	lines = append(lines, component.TitleRule(st, w, "experiments", "", tail))
	if bh <= 0 {
		return lines
	}
	var body []string
	if len(rows) == 0 {
		why := "no experiments yet: e starts one (a launch from here starts one too)"
		switch {
		case m.opts.ReadOnly:
			why = "no experiments recorded by this point of the journal"
		case m.watching():
			why = "no experiments in this cockpit's journal: the driving cockpit records them in its own (flightdeck follow shows it)"
		case x.ctl == nil:
			why = noJournalText
		}
		body = append(body, st.Dim.Render(style.Truncate(why, w)))
	} else {
		body = append(body, m.expTable(rows, x.top, vis, cur, w)...)
		body = append(body, "")
		body = append(body, m.expDetail(&x.ledger.Experiments()[cur], w)...)
	}
	for i := range bh {
		if i < len(body) {
			lines = append(lines, body[i])
		} else {
			lines = append(lines, "")
		}
	}
	return lines
}

// expTable is the column header and rows top..top+vis, the cursor's row
// marked. Columns that do not fit go: profile, then commit, then n.
func (m *Model) expTable(rows []expRow, top, vis, cur, w int) []string {
	st := &m.styles
	head := expRow{id: "id", name: "name", commit: "commit", profile: "profile", rate: "tok/s [95% CI]", n: "n", delta: "delta", state: "state"}
	width := func(f func(expRow) string) int {
		n := style.Width(f(head))
		for _, r := range rows {
			n = max(n, style.Width(f(r)))
		}
		return n
	}
	wid := width(func(r expRow) string { return r.id })
	wcommit := width(func(r expRow) string { return r.commit })
	wprof := min(width(func(r expRow) string { return r.profile }), 16)
	wrate := width(func(r expRow) string { return r.rate })
	wn := width(func(r expRow) string { return r.n })
	wdelta := width(func(r expRow) string { return r.delta })
	wstate := width(func(r expRow) string { return r.state })
	wname := min(width(func(r expRow) string { return r.name }), 40)
	showProf, showCommit, showN := true, true, true
	fixed := func() int {
		n := 2 + wid + 2 + 2 + wrate + 2 + wdelta + 2 + wstate // "> " id, name's gap, ...
		if showProf {
			n += wprof + 2
		}
		if showCommit {
			n += wcommit + 2
		}
		if showN {
			n += wn + 2
		}
		return n
	}
	const minName = 12
	for _, drop := range []*bool{&showProf, &showCommit, &showN} {
		if w-fixed() >= min(wname, minName) {
			break
		}
		*drop = false
	}
	wname = max(min(wname, w-fixed()), 4)
	line := func(r expRow, mark string, tn style.Tone, stTone style.Tone) string {
		var b strings.Builder
		b.WriteString(mark)
		b.WriteString(tn.Render(style.PadRight(r.id, wid)) + "  ")
		name := r.name
		if style.Width(name) > wname {
			name = style.Truncate(name, max(wname-3, 1)) + "..."
		}
		b.WriteString(tn.Render(style.PadRight(name, wname)) + "  ")
		if showCommit {
			b.WriteString(style.PadRight(r.commit, wcommit) + "  ")
		}
		if showProf {
			b.WriteString(style.PadRight(style.Truncate(r.profile, wprof), wprof) + "  ")
		}
		b.WriteString(style.PadRight(r.rate, wrate) + "  ")
		if showN {
			b.WriteString(style.Spaces(wn-style.Width(r.n)) + r.n + "  ")
		}
		b.WriteString(style.Spaces(wdelta-style.Width(r.delta)) + r.delta + "  ")
		b.WriteString(stTone.Render(r.state))
		return style.TruncateStyled(strings.TrimRight(b.String(), " "), w)
	}
	out := []string{line(head, "  ", st.Title, st.Title)}
	exps := m.exp.ledger.Experiments()
	for i := top; i < top+vis && i < len(rows); i++ {
		// The cursor, then a "*" on the experiments marked with space.
		cursor, tn, mark := " ", st.Text, " "
		if i == cur {
			cursor, tn = st.Accent.Render(">"), st.Accent
		}
		if slices.Contains(m.exp.marked, exps[i].ID) {
			mark = st.Accent.Render("*")
		}
		out = append(out, line(rows[i], cursor+mark, tn, st.Tone(rows[i].stTone)))
	}
	return out
}

// detailLabel is the width of the detail lines' label column.
const detailLabel = 12

// expDetail is the selected experiment's details: when and how it
// started and ended, hypothesis, conclusion, result, fingerprint summary
// and notes.
func (m *Model) expDetail(e *ledger.Experiment, w int) []string {
	st := &m.styles
	var out []string
	head := st.Accent.Render(style.Truncate(join(sanitize.String(e.ID), sanitize.String(e.Name)), w))
	when := "  started " + clock(e.Started)
	if e.StartedBy != "" {
		when += " (" + sanitize.String(string(e.StartedBy)) + ")"
	}
	if e.Open() {
		if age := style.Ago(m.now, e.Started); age != "" {
			when += ", open for " + age
		}
	} else {
		how := endedHow(e.EndedBy)
		if how == "" {
			how = "end lost, closed"
		}
		when += ", " + how + " " + clock(e.Ended)
		if d := e.Ended.Sub(e.Started); d >= 0 {
			when += " after " + style.ShortDur(d)
		}
	}
	out = append(out, style.TruncateStyled(head+st.Dim.Render(style.Truncate(when, w-style.Width(style.StripSGR(head)))), w))
	// fieldN wraps text beside its label onto up to maxLines lines (0:
	// all), the last one ending in "..." when more would follow.
	fieldN := func(label, text string, tn style.Tone, maxLines int) {
		if text == "" {
			return
		}
		lw := max(w-detailLabel, 8)
		ls := style.Wrap(text, lw)
		if maxLines > 0 && len(ls) > maxLines {
			ls = ls[:maxLines]
			ls[maxLines-1] = style.Truncate(ls[maxLines-1], max(lw-3, 1)) + "..."
		}
		for i, l := range ls {
			lab := ""
			if i == 0 {
				lab = label
			}
			out = append(out, style.TruncateStyled(st.Dim.Render(style.PadRight(lab, detailLabel))+tn.Render(l), w))
		}
	}
	field := func(label, text string, tn style.Tone) { fieldN(label, text, tn, 0) }
	cut := func(label, text string, tn style.Tone) {
		if text != "" {
			out = append(out, style.TruncateStyled(st.Dim.Render(style.PadRight(label, detailLabel))+tn.Render(style.Truncate(text, w-detailLabel)), w))
		}
	}
	field("hypothesis", sanitize.String(e.Hypothesis), st.Text)
	field("conclusion", sanitize.String(e.Conclusion), st.Text)
	r := m.expResultOf(e)
	res := resultText(r)
	warm := m.warmingUp(e, r)
	if warm != "" {
		res = warm
	}
	if r.N > 0 {
		if r.Confidence > 0 && r.Lo != nil {
			res += " (" + strconv.FormatFloat(r.Confidence*100, 'f', 1, 64) + "% conf.)"
		}
		if r.Dropped > 0 {
			res += ", " + strconv.Itoa(r.Dropped) + " warm-up dropped"
		}
		if r.AcceptLength > 0 {
			res += ", accept length " + strconv.FormatFloat(r.AcceptLength, 'f', 2, 64)
		}
	}
	if e.Open() && warm == "" {
		res += " so far"
	}
	cut("tok/s", res, st.Text)
	for _, wn := range r.Warnings {
		if warm == "" { // "no samples": the warm-up says why
			cut("", "warning: "+sanitize.String(wn), st.Warn)
		}
	}
	for i := range e.Bench {
		lab := ""
		if i == 0 {
			lab = "bench"
		}
		d := &e.Bench[i]
		tn := st.Text
		if d.Result == nil {
			tn = st.Crit
		} else if d.Result.Failed > 0 || d.Result.Cancelled {
			tn = st.Warn
		}
		fieldN(lab, sanitize.String(report.BenchRunText(*d)), tn, 2) // two lines: the counts come after the latencies
	}
	if r := e.Repeat; r != nil {
		cut("repeat", "launch "+strconv.Itoa(r.I)+" of "+strconv.Itoa(r.N)+" of "+sanitize.String(r.Series), st.Text)
	}
	fp := e.Fingerprint
	launch := e.Launch
	if fp != nil && fp.Launch != nil {
		launch = fp.Launch
	}
	if launch != nil {
		l := sanitize.String(launch.Preset) + paren(profileWord(sanitize.String(launch.Profile)))
		cmd := ""
		if fp != nil {
			cmd = sanitize.String(fp.CommandLine)
		}
		if cmd == "" {
			// Before the fingerprint: redacted here too (a journal written
			// elsewhere may hold a launch that is not).
			cmd = sanitize.String(server.CommandLine(server.RedactLaunch(*launch)))
		}
		if cmd != "" {
			l += ": " + cmd
		}
		cut("launch", l, st.Text)
	}
	switch {
	case fp == nil && e.Open():
		cut("fingerprint", "capturing ...", st.Dim)
	case fp == nil:
		cut("fingerprint", "none recorded", st.Dim)
	default:
		cut("git", gitSummary(fp.Git), st.Text)
		cut("versions", versionsSummary(fp.Versions), st.Text)
		cut("gpus", gpuSummary(fp.GPUs), st.Text)
		cut("host", join(sanitize.String(fp.Hostname), prefixed("kernel ", sanitize.String(fp.Kernel))), st.Text)
		if len(fp.Errors) > 0 {
			errs := sanitize.All(fp.Errors)
			cut("errors", strings.Join(errs, "; "), st.Warn)
		}
	}
	for i, n := range e.Notes {
		lab := ""
		if i == 0 {
			lab = "notes"
		}
		field(lab, clock(n.At)+"  "+sanitize.String(n.Text), st.Text)
	}
	return out
}

// clock is a time of day, "10:31:02", in the event's own location; "?"
// when unknown.
func clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Format("15:04:05")
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// profileWord is "profile nccl-ll-ring", "" for none.
func profileWord(p string) string { return prefixed("profile ", p) }

// gitSummary is "main a6d51c0 \"subject\"; dirty patch 3f2a9c1e0b12
// (12.3 kB); 2 untracked; 1 stash", or why there is none.
func gitSummary(g *event.GitState) string {
	if g == nil {
		return "no repository"
	}
	var parts []string
	head := git.ShortID(sanitize.String(g.Head))
	if g.Branch != "" {
		head = sanitize.String(g.Branch) + " " + head
	}
	if s := sanitize.String(g.Subject); s != "" {
		head += " " + strconv.Quote(style.Truncate(s, 50))
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
		parts = append(parts, join(name, sanitize.FirstLine(v.Value)))
	}
	if len(parts) == 0 {
		return "none recorded"
	}
	return strings.Join(parts, "  ")
}

// gpuSummary sums up the GPUs at an experiment's start: "8x NVIDIA H200
// SM 1980 MHz mem 3201 MHz PCIe Gen5 x16 P0 persistence Enabled",
// ranges where they differ ("SM 1410-1980 MHz"), throttle reasons when
// any is active.
func gpuSummary(gs []event.GPU) string {
	if len(gs) == 0 {
		return "none recorded"
	}
	var names []string
	count := map[string]int{}
	for _, g := range gs {
		n := sanitize.String(g.Name.S)
		if n == "" {
			n = "GPU"
		}
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, strconv.Itoa(count[n])+"x "+n)
	}
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

// overlayBox renders the open overlay: an experiment overlay here, the
// compare view in measureBox.
func (m *Model) overlayBox(w, h int) (lines []string, x, y int) {
	if isMeasureModal(m.modal) {
		return m.measureBox(w, h)
	}
	if !isExpModal(m.modal) {
		return nil, 0, 0
	}
	avail := h - 2
	if avail < 3 || w < 8 {
		return nil, 0, 0
	}
	title, body, iw := m.expModalBox(w, avail)
	if iw < 1 {
		return nil, 0, 0
	}
	lines = component.Frame(&m.styles, m.styles.Accent, title, body, iw)
	if len(lines) > avail {
		lines = append(lines[:avail-1:avail-1], lines[len(lines)-1])
	}
	return lines, max((w-(iw+4))/2, 0), 1 + (avail-len(lines))/2
}
