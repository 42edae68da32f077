package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
	"github.com/flightdeck-dev/flightdeck/tui/panels/spark"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// layout is how many lines each part of the screen gets.
type layout struct {
	banners  int // GPU failure / stale lines
	gpuRows  int // GPU rows below the table header
	logLines int
}

const maxBanners = 3

// computeLayout splits the height: header, banners, table header, GPU rows,
// sparkline, log title, log lines, footer. The log keeps at least a third of
// what the fixed lines leave (and 3 lines); GPU rows get the rest, all of
// them when the terminal is tall enough, else the table scrolls.
func computeLayout(height, nGPUs, nBanners int) layout {
	l := layout{banners: min(nBanners, maxBanners)}
	fixed := 1 + l.banners + 1 + 1 + 1 + 1 // header, table header, spark, log title, footer
	avail := height - fixed
	if avail < 2 {
		// Tiny terminal: drop banners before GPU rows.
		l.banners = max(0, l.banners+avail-2)
		avail = 2
	}
	minLog := max(3, avail/3)
	l.gpuRows = max(1, min(max(nGPUs, 1), avail-minLog))
	l.logLines = max(0, avail-l.gpuRows)
	return l
}

// View renders the whole screen: exactly height lines, none wider than
// width cells.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = m.windowTitle()
	return v
}

func (m *Model) render() string {
	w, h := m.width, m.height
	st := &m.styles
	lines := make([]string, 0, h+8)
	lines = append(lines, m.header(w))

	// The driver's, then what changed since the last session here (it
	// comes once, at connect), then the server's notices (at most two: an
	// action's, a failure's line), then a benchmark's and a repeat's progress, then git's (an action
	// in flight, HEAD moved), then nvidia-smi's.
	// The since notice takes the lines the others leave (at least one):
	// it never pushes a live alert (HEAD moved, a failure) off the screen.
	var live []component.Banner
	live = append(live, m.serverBanners()...)
	live = append(live, m.bench.Banners()...)
	live = append(live, m.bis.Banners()...)
	live = append(append(live, m.git.Banners(w)...), m.exp.Banners(w)...)
	gpuBanners := m.gpus.Banners(m.now)
	live = append(live, gpuBanners...)
	banners := m.driverBanners()
	room := computeLayout(h, m.gpus.Len(), maxBanners).banners - len(banners) - len(live)
	banners = append(banners, m.since.Banners(w, m.now, max(room, 1))...)
	banners = append(banners, live...)
	l := computeLayout(h, m.gpus.Len(), len(banners))
	if len(banners) > l.banners && l.banners > 0 {
		more := len(banners) - l.banners + 1
		// The hidden ones are the last: say what they are when all of
		// them are nvidia-smi's.
		what := " more notices"
		if more <= len(gpuBanners) {
			what = " more GPU notices"
		}
		tn := style.Warn
		for _, b := range banners[l.banners-1:] {
			if b.Tone == style.Crit {
				tn = style.Crit
			}
		}
		banners = append(banners[:l.banners-1], component.Banner{Text: "+" + strconv.Itoa(more) + what, Tone: tn})
	}
	for _, b := range banners[:l.banners] {
		lines = append(lines, st.Tone(b.Tone).Render(style.Truncate(b.Fit(w), w)))
	}

	body := l.gpuRows + 1 + 1 + 1 + l.logLines // table header, spark, log title
	if m.showHelp {
		lines = m.fullHelp(lines, w, body)
	} else {
		m.gpus.SetSize(w, l.gpuRows)
		lines = m.gpus.View(lines, st)
		// An empty table renders one line; keep the rest of the layout fixed.
		for len(lines) < 1+l.banners+1+l.gpuRows {
			lines = append(lines, "")
		}
		if m.noLog() {
			lines = append(lines, spark.Note(st, w, noLogText))
		} else {
			m.rate.SetBaseline(m.exp.BaselineTokPerSec())
			lines = append(lines, m.rate.Render(st, w))
		}
		switch {
		case m.git.Open, m.exp.Open, m.bis.Open:
			// The git or the experiments panel takes the log tail's place
			// (title and lines).
			c := m.body()
			c.SetSize(w, 1+l.logLines)
			lines = c.View(lines, st)
		case m.noLog():
			lines = append(lines, m.logTitle(w))
			if l.logLines > 0 {
				lines = append(lines, st.Dim.Render(style.Truncate(noLogText, w)))
				// flightdeck's own lines (Xids) still show, under it.
				if m.log.Count() > 0 {
					m.log.SetSize(w, l.logLines-1)
					lines = m.log.View(lines, st)
				}
			}
		default:
			lines = append(lines, m.logTitle(w))
			m.log.SetSize(w, l.logLines)
			lines = m.log.View(lines, st)
		}
	}
	for len(lines) < h-1 {
		lines = append(lines, "")
	}
	lines = lines[:min(len(lines), h-1)]
	lines = append(lines, m.footer(w))
	switch {
	case !m.overlay.Empty():
		m.overlay.Draw(st, lines, w, h)
	case !m.showHelp:
		// The last benchmark's result stays, above the footer, until esc;
		// it takes no keys.
		if b, iw := m.bench.Box(st, w); len(b) > 0 && len(b) <= h-2 {
			component.Splice(lines, b, max((w-(iw+4))/2, 0), h-1-len(b))
		}
	}
	return strings.Join(lines, "\n")
}

// noLogText replaces the tok/s series and the log tail when the session
// follows no server log (Options.NoLog).
const noLogText = logtail.NoLogText

// seg is one header field: text, a shorter form for narrow terminals
// ("" when none), and tone.
type seg struct {
	text  string
	short string
	tone  style.Token
	cut   bool // may be cut to fit; other fields are dropped whole
	prio  int  // fields that do not fit are dropped lowest first
	// detail is the width of a trailing detail (a loading stage, what a
	// kill waits for) that gives way before other fields are dropped: all
	// but its first minDetail cells.
	detail int
	// shortPrio is when the field takes its short form, on the scale of
	// prio: 0 (the default) before any field is dropped; higher keeps the
	// long form longer (why GPUs are sampled by nvidia-smi outranks a
	// commit subject and "ready in").
	shortPrio int
}

// minDetail is how much of a field's detail the header keeps before it
// drops other fields for it.
const minDetail = 16

// need is the width s asks for before other fields give way.
func (s seg) need() int {
	if s.text == "" {
		return -2 // and no separator
	}
	return style.Width(s.text) - max(0, s.detail-minDetail)
}

// Header field priorities: what is dropped first when the line is full.
const (
	prioRec = 1 + iota
	prioReadyIn
	prioSampler   // how GPUs are sampled, when all is well (the help screen says it too)
	prioServerWho // the server's name and pid (its state stays longer)
	prioVerdict   // the verdict's word after the open experiment's delta (the x panel gives it in full)
	prioDelta     // the open experiment's delta against the baseline
	prioExp
	prioHead
	prioProfile
	prioConnOK     // "connected": a healthy connection says less than a fallback
	prioServerCode // "server a6d51c0 != HEAD e7b9c70": the server runs other code than HEAD
	prioFallback   // GPUs sampled by nvidia-smi because NVML or the agent failed
	prioServer
	prioJournal
	prioConn
)

// header is "flightdeck  [replay]  [label]  host  conn  server  profile
// GPU sampler  HEAD ..." (or "server a6d51c0 != HEAD e7b9c70 ...",
// servercode.go), cut to width. When it does not fit, fields give
// way by priority, lowest first: a field's long form (seg.shortPrio; most
// go before any field, rightmost first) or the whole field (seg.prio: a
// bare "HEAD" or "rea" says nothing); then fields that fit again get
// their long form back, highest shortPrio first. Fields that may be cut
// (the host, an error, a server's stage) are cut instead of dropped, but
// the host gives way to HEAD (headOverHost).
func (m *Model) header(w int) string {
	host := m.hostLabel()
	segs := make([]seg, 0, 7)
	segs = append(segs, seg{text: "flightdeck", tone: style.Accent, cut: true})
	if m.opts.ReadOnly {
		segs = append(segs, seg{text: m.modeWord(), tone: style.Warn, cut: true}) // not live: never dropped
	}
	if m.label != "" {
		segs = append(segs, seg{text: m.label, tone: style.Title, cut: true})
	}
	hostI := len(segs)
	segs = append(segs, seg{text: host, short: strings.TrimSuffix(host, ":22"), tone: style.Text, cut: true, shortPrio: prioServerWho})
	if m.hasConn {
		c := m.connSeg()
		if c.prio == 0 {
			c.prio = prioConn
		}
		segs = append(segs, c)
	}
	if d, ok := m.driverSeg(); ok {
		segs = append(segs, d)
	}
	exp, rec := m.expSegs()
	segs = append(segs, rec...)
	if m.srv.hasSt || m.srv.next != "" {
		// event.ServerStatus (server control) supersedes the log heuristic.
		segs = append(segs, m.statusSegs()...)
	} else if s, ok := m.serverSeg(); ok {
		segs = append(segs, s)
	}
	if f, ok := m.gpus.HeaderField(); ok {
		segs = append(segs, samplerSeg(f))
	}
	headI := -1
	if m.head != "" {
		headI = len(segs)
		segs = append(segs, m.headSeg())
	}
	segs = append(segs, exp...)
	full := make([]string, len(segs))
	for i, s := range segs {
		full[i] = s.text
	}
	// Give way, lowest priority first, until the line fits: a field's
	// long form (shortPrio) or the whole field (prio); on a tie, a long
	// form before a field, the rightmost first. Long forms go while the
	// whole text does not fit, fields while what the rest needs (details
	// cut short) does not.
	textTotal, needTotal := -2, -2
	for _, s := range segs {
		textTotal += style.Width(s.text) + 2
		needTotal += s.need() + 2
	}
	for {
		d, whole := -1, false
		better := func(i int, wh bool, p int) bool {
			if d < 0 {
				return true
			}
			dp := segs[d].shortPrio
			if whole {
				dp = segs[d].prio
			}
			return p < dp || p == dp && (whole || !wh)
		}
		for i, s := range segs {
			if s.text == "" || i == 0 {
				continue
			}
			if s.short != "" && s.short != s.text && s.text == full[i] && textTotal > w && better(i, false, s.shortPrio) {
				d, whole = i, false
			}
			if !s.cut && s.prio > 0 && needTotal > w && better(i, true, s.prio) {
				d, whole = i, true
			}
		}
		if d < 0 {
			break
		}
		textTotal -= style.Width(segs[d].text) + 2
		needTotal -= segs[d].need() + 2
		if whole {
			segs[d].text = ""
		} else {
			segs[d].text = segs[d].short
			textTotal += style.Width(segs[d].text) + 2
			needTotal += segs[d].need() + 2
		}
	}
	// Room again: long forms back, highest shortPrio first, then left to
	// right (a header has far fewer than 64 fields; any past the 64th keep
	// their short form).
	total := headOverHost(segs, hostI, headI, needTotal, w)
	var tried uint64
	for {
		best := -1
		for i := range min(len(segs), 64) {
			if tried&(1<<i) == 0 && segs[i].text != "" && segs[i].text != full[i] && (best < 0 || segs[i].shortPrio > segs[best].shortPrio) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		tried |= 1 << best
		s := segs[best]
		s.text = full[best]
		if d := s.need() - segs[best].need(); total+d <= w {
			segs[best].text, total = full[best], total+d
		}
	}
	// What room is left goes to the details, left to right.
	slack := w - total
	var b strings.Builder
	left := w
	for i, s := range segs {
		t := s.text
		if t == "" {
			continue
		}
		room := s.need()
		if extra := style.Width(t) - room; extra > 0 {
			room += max(0, min(extra, slack))
			slack -= max(0, min(extra, slack))
			t = style.Truncate(t, room)
		}
		if i > 0 {
			if left <= 2 {
				break
			}
			if !s.cut && style.Width(t) > left-2 {
				continue
			}
			b.WriteString("  ")
			left -= 2
		}
		t = style.Truncate(t, left)
		b.WriteString(m.styles.Tone(s.tone).Render(t))
		left -= style.Width(t)
		if left <= 0 {
			break
		}
	}
	return b.String()
}

// headOverHost gives the host's place to HEAD (segs[headI]) when HEAD
// was dropped and its short form fits there: the commit the server runs
// (or HEAD) says more than the SSH address, which the window title names
// too. total is what the fields shown need (as header counts it), w the
// width; it returns the new total.
func headOverHost(segs []seg, hostI, headI, total, w int) int {
	if headI < 0 || segs[headI].text != "" || segs[hostI].text == "" {
		return total
	}
	head := segs[headI]
	head.text = head.short
	if head.text == "" {
		return total
	}
	t := total - (segs[hostI].need() + 2) + head.need() + 2
	if t > w {
		return total
	}
	segs[hostI].text, segs[headI].text = "", head.text
	return t
}

// samplerSeg is the header's field on how GPUs are sampled (f): "GPU
// nvml", "GPU agent (simulated)", which keeps its place over "ready in",
// "rec" and the commit subject but gives way to the rest (at 80 columns it
// is often not shown: the help screen says it); or, with a fallback, "GPU
// nvidia-smi (agent exited)", which outranks a healthy "connected" too,
// and is shortened to "GPU nvidia-smi" only after the server's pid and the
// experiment, HEAD and profile fields are gone (before "connected").
func samplerSeg(f gpus.Field) seg {
	if f.Fallback {
		return seg{text: f.Text, short: f.Short, tone: f.Tone, prio: prioFallback, shortPrio: prioConnOK}
	}
	return seg{text: f.Text, short: f.Short, tone: f.Tone, prio: prioSampler, shortPrio: prioSampler}
}

func (m *Model) connSeg() seg {
	c := m.conn
	switch c.Conn {
	case event.Connected:
		return seg{text: "connected", tone: style.OK, prio: prioConnOK}
	case event.Connecting:
		return seg{text: "connecting", tone: style.Warn}
	case event.Reconnecting:
		t := "reconnecting (attempt " + strconv.Itoa(c.Attempt)
		short := "reconnecting #" + strconv.Itoa(c.Attempt)
		if !c.NextTry.IsZero() && !m.now.IsZero() {
			if c.NextTry.After(m.now) {
				in := style.ShortDur(c.NextTry.Sub(m.now))
				t += ", next in " + in
				short += " in " + in
			} else {
				t += ", dialing"
			}
		}
		t += m.redialHint() + ")"
		if why := briefErr(c.Err); why != "" {
			t += ": " + why
		}
		return seg{text: t, short: short, tone: style.Warn}
	case event.NotAnswering:
		// A frozen host or a stalled link: how long it has been silent,
		// and when the connection is given up.
		t := "not answering"
		if !c.Heard.IsZero() && !m.now.IsZero() && m.now.After(c.Heard) {
			t += " for " + style.ShortDur(m.now.Sub(c.Heard))
		}
		short := t
		if !c.NextTry.IsZero() && !m.now.IsZero() && c.NextTry.After(m.now) {
			t += " (redial in " + style.ShortDur(c.NextTry.Sub(m.now)) + m.redialHint() + ")"
		}
		return seg{text: t, short: short, tone: style.Warn}
	case event.ConnFailed:
		// The full error (fingerprints, known_hosts lines, keys tried) is
		// printed when the cockpit quits; the header says so.
		if c.Err == nil {
			return seg{text: "failed", tone: style.Crit}
		}
		t := "failed: " + briefErr(c.Err)
		return seg{text: t + " (details on quit)", short: t, tone: style.Crit, cut: true} // the start of an error still helps
	case event.ConnClosed:
		return seg{text: "closed", tone: style.Dim}
	}
	return seg{text: c.Conn.String(), tone: style.Warn}
}

// briefErr is remote.Brief's few-word summary of a connection error,
// sanitised and on one line; "" for nil.
func briefErr(err error) string {
	if err == nil {
		return ""
	}
	return sanitize.String(remote.Brief(err))
}

func (m *Model) serverSeg() (seg, bool) {
	s := m.server
	name := s.name
	if name != "" {
		name += " "
	}
	var t string
	tn := style.OK
	switch s.phase {
	case serverStarting:
		t, tn = "starting", style.Warn
	case serverRunning:
		t = "running"
	case serverReady:
		t = "ready"
		if age := style.Ago(m.now, s.since); age != "" {
			t += " " + age
		}
	case serverFailed:
		t, tn = "failed ("+string(s.fail)+")", style.Crit
	default:
		return seg{}, false
	}
	return seg{text: name + t, short: t, tone: tn, prio: prioServer, shortPrio: prioServerWho}, true
}

// logTitle is the log panel's title line (logtail.Panel.Title).
func (m *Model) logTitle(w int) string { return m.log.Title(&m.styles, w) }
