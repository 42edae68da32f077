package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// changes lists, for each experiment after the first, its change in tok/s
// from the previous one and what differed in their fingerprints: the
// "diff-only" view of what could explain the change.
func (m *mdWriter) changes(r *Report, exps []ledger.Experiment, moves []RepoChange) {
	if len(exps) < 2 {
		return
	}
	m.f("## What changed\n\n")
	for i := 1; i < len(exps); i++ {
		a, b := &exps[i-1], &exps[i]
		m.f("- **%s -> %s**", mdText(a.ID), mdText(b.ID))
		if p, ok := compare.DeltaPct(b, a); ok {
			m.f(": %s (%s -> %s tok/s)", fmtDelta(p), fmtRate(a.Result.Median), fmtRate(b.Result.Median))
			if row := r.VerdictVs(a, b); row != nil {
				m.f(", %s", mdText(row.VerdictText()))
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
