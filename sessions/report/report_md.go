package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// ReportOptions configure the exports.
type ReportOptions struct {
	// Baseline is the experiment (id or name) the deltas are relative to;
	// "" is the first experiment with a result.
	Baseline string
	// Path is the journal file, named in the report; "" names none.
	Path string
}

// WriteMarkdown writes r as a Markdown report that tells the session's
// story with numbers: a title block (host, date, duration, flightdeck
// version), the experiment table (id, name, commit, profile, tok/s median
// with its 95 % confidence interval and n, the change against the
// baseline, how it ended), what changed from each experiment to the next,
// one section per experiment (result, hypothesis, conclusion, fingerprint:
// commit and dirty patch, launch, versions, GPU state at start and end,
// notes), and every note in time order (h:mm:ss since the start). Remote
// and typed text is sanitised and escaped for Markdown. It returns an
// error for an unknown opts.Baseline, or w's error.
func WriteMarkdown(w io.Writer, r *Report, opts ReportOptions) error {
	base, err := r.Baseline(opts.Baseline)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	m := mdWriter{w: bw, start: r.Header.Created}
	if x := r.Ledger.Baseline(); x != nil {
		m.marked = x.ID
	}
	m.title(r, opts)
	exps := r.Ledger.Experiments()
	m.table(r, exps, base)
	if err := m.bisects(r); err != nil {
		return err
	}
	m.changes(r, exps, r.RepoChanges)
	m.sessions(r)
	m.gpuEvents(r)
	for i := range exps {
		m.experiment(&exps[i], base, r.VerdictVs(base, &exps[i]), r.ExpXids(exps[i].ID))
	}
	m.notes(r.Ledger.Notes())
	return bw.Flush()
}

type mdWriter struct {
	w      *bufio.Writer
	start  time.Time
	marked string // the experiment marked as the baseline, "" when none
}

// bisects writes the journal's bisects: each one's outcome and evidence
// table.
func (m *mdWriter) bisects(r *Report) error {
	if len(r.Bisects) == 0 {
		return nil
	}
	m.f("## Bisects\n\n")
	for _, b := range r.Bisects {
		if err := writeBisectMarkdown(m.w, b); err != nil {
			return err
		}
	}
	return nil
}

func (m *mdWriter) f(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

func (m *mdWriter) at(t time.Time) string { return FormatElapsed(t.Sub(m.start)) }

func (m *mdWriter) title(r *Report, opts ReportOptions) {
	h := r.Header
	name := h.Name
	if name == "" {
		name = h.Label
	}
	if name != "" {
		m.f("# flightdeck session %s on %s\n\n", mdText(name), mdText(h.Host))
	} else {
		m.f("# flightdeck session on %s\n\n", mdText(h.Host))
	}
	state := ""
	if r.Live {
		state = " (still being recorded)"
	}
	m.f("- **Started:** %s\n", h.Created.UTC().Format("2006-01-02 15:04:05 UTC"))
	m.f("- **Duration:** %s%s\n", FormatElapsed(r.Duration()), state)
	var who []string
	if h.User != "" {
		who = append(who, "user "+mdText(h.User))
	}
	if h.Hostname != "" {
		who = append(who, "on "+mdText(h.Hostname))
	}
	if h.PID != 0 {
		who = append(who, "pid "+strconv.Itoa(h.PID))
	}
	m.f("- **Recorded by:** flightdeck %s", mdText(h.Flightdeck))
	if len(who) > 0 {
		m.f(" (%s)", strings.Join(who, ", "))
	}
	m.f("\n")
	if h.LogPath != "" {
		m.f("- **Server log:** %s\n", mdCode(h.LogPath))
	}
	if opts.Path != "" {
		m.f("- **Journal:** %s (replay: %s)\n", mdCode(opts.Path), mdCode("flightdeck replay "+shellWord(opts.Path)))
	}
	m.f("\n")
}

func (m *mdWriter) table(r *Report, exps []ledger.Experiment, base *ledger.Experiment) {
	m.f("## Experiments\n\n")
	m.orphans(r)
	if len(exps) == 0 {
		m.f("No experiments were recorded.\n\n")
		return
	}
	vs := "vs baseline"
	if base != nil {
		vs = "vs " + mdCell(base.ID)
	}
	accept := false
	for i := range exps {
		accept = accept || exps[i].Result.AcceptLength > 0
	}
	acceptHead, acceptRule := "", ""
	if accept {
		acceptHead, acceptRule = " accept length |", "--------------|"
	}
	m.f("| id | name | commit | profile | tok/s median [within-launch 95%% interval] (n) |%s %s | verdict %s (across launches) | ended |\n", acceptHead, vs, vs)
	m.f("|----|------|--------|---------|-----------------------------------------------|%s----|---------|-------|\n", acceptRule)
	for i := range exps {
		x := &exps[i]
		delta, verdict := "-", "-"
		switch {
		case base == nil:
		case x == base || x.ID == base.ID:
			delta, verdict = "baseline", "baseline"
		default:
			if p, ok := compare.DeltaPct(x, base); ok {
				delta = fmtDelta(p)
			}
			if row := r.VerdictVs(base, x); row != nil {
				verdict = mdCell(row.VerdictText())
			}
		}
		commit := orDash(mdCell(git.ShortID(x.Commit())))
		if x.CommitUnknown() != "" {
			commit = "unknown"
		}
		acc := ""
		if accept {
			acc = " - |"
			if a := x.Result.AcceptLength; a > 0 {
				acc = " " + compare.FormatValue(a, compare.UnitTokens) + " |"
			}
		}
		m.f("| %s | %s | %s | %s | %s |%s %s | %s | %s |\n", mdCell(x.ID), mdCell(x.Name), commit,
			orDash(mdCell(x.Profile())), FormatResult(x.Result), acc, delta, verdict, EndedWords(x))
	}
	m.f("\n%s\n\n", VerdictLegend)
}

// sessions lists the cockpit sessions that wrote the journal when more
// than one did (--journal FILE appended to it, e.g. after a crash).
func (m *mdWriter) sessions(r *Report) {
	if len(r.Sessions) == 0 {
		return
	}
	m.f("## Sessions\n\n")
	m.f("1. %s %s (created the journal)\n", m.at(r.Header.Created), mdText(journal.DescribeSession(r.Header)))
	for i, s := range r.Sessions {
		m.f("%d. %s %s", i+2, m.at(s.At), mdText(journal.DescribeSession(s.Session.SessionHeader)))
		if s.Crashed != "" {
			if x := r.Ledger.Find(s.Crashed); x != nil {
				m.f("; the previous session ended without ending %s (crash): ended at its last event, %s", mdText(x.ID), m.at(x.Ended))
			}
		}
		m.f("\n")
	}
	m.f("\n")
}

// gpuEvents lists the driver's Xids and the changes of GPU sampling path.
func (m *mdWriter) gpuEvents(r *Report) {
	if len(r.GPUEvents) == 0 {
		return
	}
	m.f("## GPU events\n\n")
	for _, g := range r.GPUEvents {
		m.f("- %s", m.at(g.At))
		if g.Exp != "" {
			m.f(" [%s]", mdText(g.Exp))
		}
		m.f(" %s\n", mdText(g.Describe(r.Header.Created)))
	}
	m.f("\n")
}

func (m *mdWriter) notes(notes []ledger.TimedNote) {
	m.f("## Notes\n\n")
	if len(notes) == 0 {
		m.f("No notes.\n")
		return
	}
	for _, n := range notes {
		exp := ""
		if n.Exp != "" {
			exp = " (" + mdText(n.Exp) + ")"
		}
		m.f("- %s%s %s\n", m.at(n.At), exp, mdText(n.Text))
	}
}

// mdText makes text safe inside a Markdown paragraph or table cell: one
// sanitised line with the characters that would start markup (emphasis,
// links, HTML, code, table cells) escaped by backslashes. (A line of it
// never starts a block: it always follows other text.)
func mdText(s string) string {
	s = sanitize.OneLine(s)
	if !strings.ContainsAny(s, "\\`*[]<|_") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '[', ']', '<', '|':
			b.WriteByte('\\')
		case '_':
			// Escaped only where it could start or end emphasis; inside a
			// word (NCCL_ALGO) it is literal in CommonMark.
		}
		b.WriteRune(r)
	}
	return escapeEdgeUnderscores(b.String())
}

// escapeEdgeUnderscores escapes underscores at the start or end of a word.
func escapeEdgeUnderscores(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	rs := []rune(s)
	word := func(i int) bool {
		if i < 0 || i >= len(rs) {
			return false
		}
		r := rs[i]
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127
	}
	for i, r := range rs {
		if r == '_' && (!word(i-1) || !word(i+1)) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCell is mdText for a table cell.
func mdCell(s string) string { return mdText(s) }

// mdCode puts one sanitised line in a code span whose backtick fence is
// longer than any backtick run in it ("-" for ""). Not for table cells.
func mdCode(s string) string {
	s = sanitize.OneLine(s)
	if s == "" {
		return "-"
	}
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

// shellWord quotes a path for a command line shown to copy: as is when it
// holds only safe characters, else in single quotes.
func shellWord(s string) string {
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// orphans warns of the experiments whose exp-start the journal lacks (a
// garbled or lost line), with what their other records kept; nothing when
// there are none.
func (m *mdWriter) orphans(r *Report) {
	orphans := r.Ledger.Orphans()
	if len(orphans) == 0 {
		return
	}
	m.f("> **Warning:** the journal has records of experiments whose exp-start line is missing (garbled or lost); they are not in the table:\n")
	for i := range orphans {
		o := &orphans[i]
		m.f("> - %s: %s", mdCell(o.ID), mdCell(strings.Join(o.Records, ", ")))
		if c := o.Commit(); c != "" {
			m.f("; commit %s", mdCode(git.ShortID(sanitize.OneLine(c))))
		}
		if !o.Open() {
			m.f("; ended: %s", mdCell(FormatResult(o.Result)))
		}
		m.f("\n")
	}
	m.f("\n")
}
