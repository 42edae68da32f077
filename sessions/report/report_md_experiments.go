package report

import (
	"maps"
	"slices"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

func (m *mdWriter) experiment(x *ledger.Experiment, base *ledger.Experiment, verdict *compare.ResultRow, xids []GPUEvent) {
	m.f("## %s %s\n\n", mdText(x.ID), mdText(x.Name))
	res := x.Result
	if res.N == 0 {
		m.f("- **Result:** no steady-state tok/s samples")
	} else {
		m.f("- **Result:** %s tok/s median", fmtRate(res.Median))
		if res.Lo != nil && res.Hi != nil {
			m.f(", within-launch 95 %% interval [%s, %s]", fmtRate(*res.Lo), fmtRate(*res.Hi))
		} else {
			m.f(", no within-launch interval (needs at least 6 samples)")
		}
		m.f(", n=%d", res.N)
		if res.AcceptLength > 0 {
			m.f(", accept length %s", compare.FormatValue(res.AcceptLength, compare.UnitTokens))
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
	if verdict != nil {
		m.f("- **Verdict vs %s:** %s\n", mdText(base.ID), mdText(verdict.VerdictText()))
	}
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
	case event.TriggerKey:
		return "hand (e)"
	case event.TriggerLaunch:
		return "a launch"
	case event.TriggerRelaunch:
		return "a relaunch"
	case event.TriggerKill:
		return "a kill"
	case event.TriggerExit:
		return "the server exiting"
	case event.TriggerQuit:
		return "quitting the cockpit"
	case event.TriggerTakenOver:
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
