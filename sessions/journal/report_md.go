package journal

import (
	"bufio"
	"fmt"
	"io"
	"maps"
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
	m.table(exps, base)
	m.changes(exps, r.RepoChanges)
	if m.overlap {
		m.f("~ the two 95 %% confidence intervals overlap: not a clear difference.\n\n")
	}
	m.sessions(r)
	m.gpuEvents(r)
	for i := range exps {
		m.experiment(&exps[i], base, r.ExpXids(exps[i].ID))
	}
	m.notes(r.Ledger.Notes())
	return bw.Flush()
}

type mdWriter struct {
	w      *bufio.Writer
	start  time.Time
	marked string // the experiment marked as the baseline, "" when none
	// overlap is set once a "~" (overlapping confidence intervals) has
	// been written: the legend follows the table and What changed.
	overlap bool
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

func (m *mdWriter) table(exps []ledger.Experiment, base *ledger.Experiment) {
	m.f("## Experiments\n\n")
	if len(exps) == 0 {
		m.f("No experiments were recorded.\n\n")
		return
	}
	vs := "vs baseline"
	if base != nil {
		vs = "vs " + mdCell(base.ID)
	}
	m.f("| id | name | commit | profile | tok/s median [95%% CI] (n) | %s | ended |\n", vs)
	m.f("|----|------|--------|---------|---------------------------|----|-------|\n")
	for i := range exps {
		x := &exps[i]
		delta := "-"
		switch {
		case base == nil:
		case x == base || x.ID == base.ID:
			delta = "baseline"
		default:
			if p, ok := compare.DeltaPct(x, base); ok {
				delta = fmtDelta(p)
				if compare.CIsOverlap(x.Result, base.Result) {
					delta += " ~"
					m.overlap = true
				}
			}
		}
		commit := orDash(mdCell(git.ShortID(x.Commit())))
		if x.CommitUnknown() != "" {
			commit = "unknown"
		}
		m.f("| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(x.ID), mdCell(x.Name), commit,
			orDash(mdCell(x.Profile())), FormatResult(x.Result), delta, EndedWords(x))
	}
	m.f("\n")
}

// sessions lists the cockpit sessions that wrote the journal when more
// than one did (--journal FILE appended to it, e.g. after a crash).
func (m *mdWriter) sessions(r *Report) {
	if len(r.Sessions) == 0 {
		return
	}
	m.f("## Sessions\n\n")
	m.f("1. %s %s (created the journal)\n", m.at(r.Header.Created), mdText(DescribeSession(r.Header)))
	for i, s := range r.Sessions {
		m.f("%d. %s %s", i+2, m.at(s.At), mdText(DescribeSession(s.Session.SessionHeader)))
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

// changes lists, for each experiment after the first, its change in tok/s
// from the previous one and what differed in their fingerprints: the
// "diff-only" view of what could explain the change.
func (m *mdWriter) changes(exps []ledger.Experiment, moves []RepoChange) {
	if len(exps) < 2 {
		return
	}
	m.f("## What changed\n\n")
	for i := 1; i < len(exps); i++ {
		a, b := &exps[i-1], &exps[i]
		m.f("- **%s -> %s**", mdText(a.ID), mdText(b.ID))
		if p, ok := compare.DeltaPct(b, a); ok {
			m.f(": %s (%s -> %s tok/s)", fmtDelta(p), fmtRate(a.Result.Median), fmtRate(b.Result.Median))
			if compare.CIsOverlap(a.Result, b.Result) {
				m.f(" ~")
				m.overlap = true
			}
		}
		diffs := fingerprintDiff(a, b)
		for _, mv := range moves {
			// Moves after a started and up to b's start: what happened
			// to the checkout in between.
			if mv.At.After(a.Started) && !mv.At.After(b.Started) {
				diffs = append(diffs, mdText(mv.What)+" at "+m.at(mv.At))
			}
		}
		if len(diffs) == 0 {
			m.f("; no recorded difference\n")
			continue
		}
		m.f("; %s\n", strings.Join(diffs, "; "))
	}
	m.f("\n")
}

// fingerprintDiff names what differs between two experiments'
// fingerprints and launches, in Markdown. A value known on one side only
// is never a change: it is named as unknown for that experiment ("commit,
// nccl unknown for e1"). GPUs are compared under load (their state at the
// end) when both have it, and left out otherwise: at the start one may be
// idle and the other still loaded from the run before.
func fingerprintDiff(a, b *ledger.Experiment) []string {
	var out []string
	unknown := map[*ledger.Experiment][]string{}
	unk := func(x *ledger.Experiment, what string) { unknown[x] = append(unknown[x], what) }
	pair := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s %s -> %s", what, orDash(mdText(x)), orDash(mdText(y))))
		}
	}
	fa, fb := a.Fingerprint, b.Fingerprint
	for _, x := range []*ledger.Experiment{a, b} {
		if x.Fingerprint == nil {
			out = append(out, "no fingerprint captured for "+mdText(x.ID))
		}
	}
	ga, gb := a.Git(), b.Git()
	if fa != nil && fb != nil {
		ua, ub := a.CommitUnknown(), b.CommitUnknown()
		switch {
		case ua == "" && ub == "" && ga != nil && gb != nil:
			if ga.Head != gb.Head {
				s := fmt.Sprintf("commit %s -> %s", mdText(git.ShortID(ga.Head)), mdText(git.ShortID(gb.Head)))
				if gb.Subject != "" {
					s += " (" + mdText(strconv.Quote(gb.Subject)) + ")"
				}
				out = append(out, s)
			}
			pair("branch", compare.BranchText(ga.Branch), compare.BranchText(gb.Branch))
		case ga == nil && gb == nil && ua == "" && ub == "":
			// No repository configured on either side.
		default:
			for _, x := range []*ledger.Experiment{a, b} {
				if x.CommitUnknown() != "" || x.Git() == nil {
					unk(x, "commit")
				}
			}
		}
		if ga != nil && gb != nil && ua == "" && ub == "" {
			pa, pb := a.PatchUnknown(), b.PatchUnknown()
			switch {
			case pa == "" && pb == "":
				if ga.PatchSHA256 != gb.PatchSHA256 {
					out = append(out, "dirty patch "+compare.PatchText(ga)+" -> "+compare.PatchText(gb))
				}
			default:
				for _, x := range []*ledger.Experiment{a, b} {
					if x.PatchUnknown() != "" {
						unk(x, "dirty state")
					}
				}
			}
		}
	}
	la, lb := a.LaunchInfo(), b.LaunchInfo()
	if la != nil && lb != nil {
		pair("profile", a.Profile(), b.Profile())
		pair("preset", la.Preset, lb.Preset)
		if d := envDiff(la.Env, lb.Env); d != "" {
			out = append(out, "env "+d)
		}
		if ca, cb := commandLineOf(a), commandLineOf(b); ca != cb {
			out = append(out, "command line "+commandLineDiff(ca, cb))
		}
	}
	if fa != nil && fb != nil {
		va := map[string]event.Version{}
		for _, v := range fa.Versions {
			va[v.Name] = v
		}
		for _, v := range fb.Versions {
			x, ok := va[v.Name]
			switch {
			case !ok:
			case x.Err == "" && v.Err == "":
				if x.Value != v.Value {
					out = append(out, fmt.Sprintf("%s %s -> %s", mdText(v.Name), mdText(x.Value), mdText(v.Value)))
				}
			case x.Err != "" && v.Err != "":
				// Unknown on both sides: nothing to compare.
			case x.Err != "":
				unk(a, mdText(v.Name))
			default:
				unk(b, mdText(v.Name))
			}
		}
		known := func(what, x, y string) {
			switch {
			case x != "" && y != "":
				pair(what, x, y)
			case x == "" && y != "":
				unk(a, what)
			case x != "" && y == "":
				unk(b, what)
			}
		}
		known("host", fa.Hostname, fb.Hostname)
		known("kernel", fa.Kernel, fb.Kernel)
	}
	if sa, sb := compare.GPUStateSummary(a.EndGPUs), compare.GPUStateSummary(b.EndGPUs); sa != "" && sb != "" && sa != sb {
		out = append(out, "GPUs under load (at the end) "+mdText(sa)+" -> "+mdText(sb))
	}
	for _, x := range []*ledger.Experiment{a, b} {
		if w := unknown[x]; len(w) > 0 {
			out = append(out, strings.Join(w, ", ")+" unknown for "+mdText(x.ID))
		}
	}
	return out
}

// commandLineDiff says how command line b differs from a, word by word:
// the words after their common start and before their common end, with
// the flag before them for context ("`--port 33551` -> `--port 34012`"),
// cut to a few words each.
func commandLineDiff(a, b string) string {
	wa, wb := strings.Fields(a), strings.Fields(b)
	i := 0
	for i < len(wa) && i < len(wb) && wa[i] == wb[i] {
		i++
	}
	ja, jb := len(wa), len(wb)
	for ja > i && jb > i && wa[ja-1] == wb[jb-1] {
		ja, jb = ja-1, jb-1
	}
	ctx := ""
	if i > 0 && strings.HasPrefix(wa[i-1], "-") && (ja == i || !strings.HasPrefix(wa[i], "-")) && (jb == i || !strings.HasPrefix(wb[i], "-")) {
		ctx = wa[i-1] + " " // the changed words are the value of this flag
	}
	words := func(w []string) string {
		const most = 6
		if len(w) == 0 {
			return "(nothing)"
		}
		s := strings.Join(w[:min(len(w), most)], " ")
		if len(w) > most {
			s += " ..."
		}
		return mdCode(ctx + s)
	}
	return words(wa[i:ja]) + " -> " + words(wb[i:jb])
}

// commandLineOf is the launch's command line, secrets redacted: the
// fingerprint's when captured, else built from the launch's argv.
func commandLineOf(x *ledger.Experiment) string {
	if x.Fingerprint != nil && x.Fingerprint.CommandLine != "" {
		return x.Fingerprint.CommandLine
	}
	if l := x.LaunchInfo(); l != nil {
		return server.CommandLine(*redactLaunch(l))
	}
	return ""
}

// envDiff describes how env b differs from env a ("+NCCL_ALGO=Ring,
// -FOO, NCCL_PROTO=Simple->LL"), secrets redacted; "" when equal.
func envDiff(a, b map[string]string) string {
	a, b = server.Redact(a), server.Redact(b)
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(b)) {
		va, ok := a[k]
		switch {
		case !ok:
			parts = append(parts, "+"+k+"="+b[k])
		case va != b[k]:
			parts = append(parts, k+"="+va+"->"+b[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if _, ok := b[k]; !ok {
			parts = append(parts, "-"+k)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return mdCode(strings.Join(parts, " "))
}

func (m *mdWriter) experiment(x *ledger.Experiment, base *ledger.Experiment, xids []GPUEvent) {
	m.f("## %s %s\n\n", mdText(x.ID), mdText(x.Name))
	res := x.Result
	if res.N == 0 {
		m.f("- **Result:** no steady-state tok/s samples")
	} else {
		m.f("- **Result:** %s tok/s median", fmtRate(res.Median))
		if res.Lo != nil && res.Hi != nil {
			m.f(", 95 %% CI [%s, %s]", fmtRate(*res.Lo), fmtRate(*res.Hi))
		} else {
			m.f(", no confidence interval (needs at least 6 samples)")
		}
		m.f(", n=%d", res.N)
		if res.AcceptLength > 0 {
			m.f(", accept length %.2f", res.AcceptLength)
		}
		if base != nil && base.ID != x.ID {
			if p, ok := compare.DeltaPct(x, base); ok {
				m.f("; %s vs %s", fmtDelta(p), mdText(base.ID))
			}
		}
	}
	if res.Dropped > 0 {
		m.f(" (%d warm-up or idle samples left out)", res.Dropped)
	}
	m.f("\n")
	for _, w := range res.Warnings {
		m.f("- **Warning:** %s\n", mdText(w))
	}
	for _, g := range xids {
		when := "during it"
		if g.Before(x.ID) {
			when = "earlier in this cockpit session"
		}
		m.f("- **Xid** at %s (%s): %s\n", m.at(g.At), when, mdText(g.Describe(m.start)))
	}
	m.f("- **Time:** %s", m.at(x.Started))
	if !x.Open() {
		m.f(" -> %s (%s)", m.at(x.Ended), FormatElapsed(x.Ended.Sub(x.Started)))
	}
	m.f("; started by %s, %s\n", triggerText(x.StartedBy), endedText(x))
	if m.marked != "" && m.marked == x.ID {
		m.f("- **Baseline:** marked\n")
	}
	if rt := RepeatText(x); rt != "" {
		m.f("- **Repeat:** %s\n", mdText(rt))
	}
	for _, d := range x.Bench {
		m.f("- **Benchmark:** %s\n", mdText(BenchRunText(d)))
	}
	m.f("- **Hypothesis:** %s\n", orNone(mdText(x.Hypothesis)))
	m.f("- **Conclusion:** %s\n", orNone(mdText(x.Conclusion)))
	fp := x.Fingerprint
	if fp == nil {
		m.f("- **Fingerprint:** not captured\n")
	}
	if why := x.CommitUnknown(); fp != nil && why != "" {
		m.f("- **Commit:** unknown (%s)", mdText(why))
		if g := x.Git(); g != nil && x.PatchUnknown() == "" {
			m.f("; dirty: patch %s", compare.PatchText(g))
		} else {
			m.f("; dirty state unknown")
		}
		if g := x.Git(); g != nil && g.Repo != "" {
			m.f(" (repository %s)", mdCode(g.Repo))
		}
		m.f("\n")
	} else if g := x.Git(); g != nil {
		m.f("- **Commit:** %s", orDash(mdText(git.ShortID(g.Head))))
		if g.Branch != "" {
			m.f(" on %s", mdText(g.Branch))
		} else if g.Head != "" {
			m.f(" (detached)")
		}
		if g.Subject != "" {
			m.f(": %s", mdText(g.Subject))
		}
		if why := x.PatchUnknown(); why != "" {
			m.f("; dirty state unknown (%s)", mdText(why))
		} else if pt := compare.PatchText(g); pt == "clean" {
			m.f("; clean")
		} else {
			m.f("; dirty: patch %s", pt)
		}
		if st := compare.DiffStatSummary(g.Patch); st != "" {
			m.f(" (%s)", st)
		}
		if len(g.Untracked) > 0 {
			m.f("; %d untracked", len(g.Untracked))
		}
		if len(g.Stashes) > 0 {
			m.f("; %d stashed", len(g.Stashes))
		}
		m.f(" (repository %s)\n", mdCode(g.Repo))
	}
	if l := x.LaunchInfo(); l != nil {
		m.f("- **Launch:** preset %s, profile %s", orDash(mdText(l.Preset)), orDash(mdText(x.Profile())))
		if cl := commandLineOf(x); cl != "" {
			m.f(": %s", mdCode(cl))
		}
		m.f("\n")
		if len(l.Env) > 0 {
			env := server.Redact(l.Env)
			var kv []string
			for _, k := range slices.Sorted(maps.Keys(env)) {
				kv = append(kv, k+"="+env[k])
			}
			m.f("- **Env:** %s\n", mdCode(strings.Join(kv, " ")))
		}
	}
	if fp != nil {
		if len(fp.Versions) > 0 {
			var ok, bad []string
			for _, v := range fp.Versions {
				if v.Err != "" {
					bad = append(bad, mdText(v.Name)+" ("+mdText(v.Err)+")")
				} else {
					ok = append(ok, mdText(v.Name)+" "+mdText(v.Value))
				}
			}
			m.f("- **Versions:** %s", orDash(strings.Join(ok, ", ")))
			if len(bad) > 0 {
				m.f("; failed: %s", strings.Join(bad, ", "))
			}
			m.f("\n")
		}
		if fp.Hostname != "" || fp.Kernel != "" {
			m.f("- **Host:** %s, kernel %s\n", orDash(mdText(fp.Hostname)), orDash(mdText(fp.Kernel)))
		}
		if s := compare.GPUStateSummary(fp.GPUs); s != "" {
			m.f("- **%s:** %s\n", StartGPUsLabel(x), mdText(s))
		}
	}
	if s := compare.GPUStateSummary(x.EndGPUs); s != "" {
		m.f("- **GPUs at end:** %s\n", mdText(s))
	}
	if fp != nil && len(fp.Errors) > 0 {
		errs := make([]string, len(fp.Errors))
		for i, e := range fp.Errors {
			errs[i] = mdText(e)
		}
		m.f("- **Not captured:** %s\n", strings.Join(errs, "; "))
	}
	if len(x.Notes) > 0 {
		m.f("- **Notes:**\n")
		for _, n := range x.Notes {
			m.f("  - %s %s\n", m.at(n.At), mdText(n.Text))
		}
	}
	m.f("\n")
}

func triggerText(t event.Trigger) string {
	switch t {
	case ledger.TriggerKey:
		return "hand (e)"
	case ledger.TriggerLaunch:
		return "a launch"
	case ledger.TriggerRelaunch:
		return "a relaunch"
	case ledger.TriggerKill:
		return "a kill"
	case ledger.TriggerExit:
		return "the server exiting"
	case ledger.TriggerQuit:
		return "quitting the cockpit"
	case ledger.TriggerTakenOver:
		return "another cockpit taking over"
	case "":
		return "-"
	}
	return mdText(string(t))
}

func endedText(x *ledger.Experiment) string {
	switch EndedHow(x) {
	case "open":
		return "still open"
	case "crash":
		return "no end recorded (the cockpit stopped without ending it)"
	}
	return "ended by " + triggerText(x.EndedBy)
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
