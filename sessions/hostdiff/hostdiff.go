// Package hostdiff compares two states of a host (event.Fingerprint: the
// one an earlier session recorded, and the one captured now) and says
// what changed in words: HEAD and its branch with the reflog entries in
// between, the dirty patch, the versions the probes read, the GPUs and
// their links, the running server's launch command and env, the kernel.
//
// It does no I/O: what only the host can say about the time between (the
// reflog, the commits and files between the two HEADs) comes in Between,
// read by the caller (sessions).
package hostdiff

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Between is what the checkout says of the time between the two states.
type Between struct {
	// Reflog is HEAD's reflog, newest first (git.Repo.Status reads it);
	// Compare keeps the entries after the one that put HEAD on the earlier
	// state's commit, none older than that state (to the second).
	Reflog []event.RefEntry
	// Range is what lies between the earlier HEAD and the HEAD now
	// (git.Repo.Range); nil when not read.
	Range *event.CommitRange
}

// The groups of event.HostChange (event.HostGroups), in listing order.
const (
	GroupGit      = "git"
	GroupPatch    = "patch"
	GroupVersions = "versions"
	GroupGPUs     = "gpus"
	GroupLaunch   = "launch"
	GroupKernel   = "kernel"
)

// Compare lists what differs from was (the earlier state) to now, in
// group order. A part unknown on either side (no checkout read, a probe
// that failed, no GPU sample, no launch known) is not a change.
func Compare(was, now event.Fingerprint, b Between) []event.HostChange {
	var out []event.HostChange
	out = append(out, gitChanges(was, now, b)...)
	out = append(out, versionChanges(was.Versions, now.Versions)...)
	out = append(out, gpuChanges(was.GPUs, now.GPUs)...)
	out = append(out, launchChanges(was.Launch, now.Launch)...)
	if was.Kernel != "" && now.Kernel != "" && was.Kernel != now.Kernel {
		out = append(out, event.HostChange{Group: GroupKernel, Name: "kernel", Was: was.Kernel, Now: now.Kernel})
	}
	return out
}

func gitChanges(was, now event.Fingerprint, b Between) []event.HostChange {
	w, n := was.Git, now.Git
	if w == nil || n == nil || w.Head == "" || n.Head == "" {
		return nil
	}
	var out []event.HostChange
	if w.Head != n.Head {
		ch := event.HostChange{Group: GroupGit, Name: "HEAD", Was: w.Head, Now: n.Head, Range: b.Range}
		since := was.At.Truncate(time.Second)
		var entries []event.RefEntry
		for _, e := range b.Reflog {
			if e.Time.Before(since) || e.ID == w.Head {
				break // newest first: the rest are older still, or moved HEAD onto the earlier state's
			}
			entries = append(entries, e)
		}
		slices.Reverse(entries) // oldest first
		for _, e := range entries {
			if e.Action != "" && !slices.Contains(ch.How, e.Action) {
				ch.How = append(ch.How, e.Action)
			}
			ch.Detail = append(ch.Detail, "reflog "+e.Time.Local().Format("2006-01-02 15:04")+" "+e.Short+" "+e.Message)
		}
		if r := b.Range; r != nil {
			for _, c := range r.Ahead {
				ch.Detail = append(ch.Detail, "+ "+c)
			}
			for _, c := range r.Behind {
				ch.Detail = append(ch.Detail, "- "+c)
			}
			if len(r.Files) > 0 {
				ch.Detail = append(ch.Detail, "files "+strings.Join(r.Files, ", ")+moreWords(max(r.FilesTotal, len(r.Files))-len(r.Files)))
			}
			if r.Err != "" {
				ch.Detail = append(ch.Detail, "range: "+r.Err)
			}
		}
		out = append(out, ch)
	}
	if w.Branch != n.Branch {
		out = append(out, event.HostChange{Group: GroupGit, Name: "branch", Was: orDetached(w.Branch), Now: orDetached(n.Branch)})
	}
	if w.PatchSHA256 != n.PatchSHA256 && !patchFailed(was) && !patchFailed(now) {
		ch := event.HostChange{Group: GroupPatch, Name: "patch", Was: patchWords(w), Now: patchWords(n)}
		if n.PatchSHA256 != "" {
			ch.Detail = append(ch.Detail, "now "+strconv.Itoa(n.PatchBytes)+" bytes, sha256 "+short(n.PatchSHA256, 12))
		}
		out = append(out, ch)
	}
	return out
}

// patchFailed says the fingerprint's patch could not be read (a "git
// patch:" error, as ledger.PatchUnknown reads it): its empty hash is not
// a clean tree, so no change is claimed.
func patchFailed(fp event.Fingerprint) bool {
	for _, e := range fp.Errors {
		if strings.HasPrefix(e, "git patch:") {
			return true
		}
	}
	return false
}

// patchWords is a checkout's patch in a few words: "clean", "2 files, +12
// -3".
func patchWords(g *event.GitState) string {
	if g.PatchSHA256 == "" {
		return "clean"
	}
	if s := compare.DiffStatSummary(g.Patch); s != "" {
		return s
	}
	return strconv.Itoa(g.PatchBytes) + " bytes"
}

func versionChanges(was, now []event.Version) []event.HostChange {
	old := map[string]string{}
	for _, v := range was {
		if v.Err == "" && v.Value != "" {
			old[v.Name] = v.Value
		}
	}
	var out []event.HostChange
	for _, v := range now {
		if o, ok := old[v.Name]; ok && v.Err == "" && v.Value != "" && v.Value != o {
			out = append(out, event.HostChange{Group: GroupVersions, Name: v.Name, Was: o, Now: v.Value})
		}
	}
	return out
}

func gpuChanges(was, now []event.GPU) []event.HostChange {
	if len(was) == 0 || len(now) == 0 {
		return nil
	}
	byIndex := func(gs []event.GPU) map[int]event.GPU {
		m := map[int]event.GPU{}
		for _, g := range gs {
			m[g.Index] = g
		}
		return m
	}
	w, n := byIndex(was), byIndex(now)
	idx := slices.Sorted(maps.Keys(w))
	for i := range n {
		if _, ok := w[i]; !ok {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	var out []event.HostChange
	for _, i := range idx {
		name := "GPU " + strconv.Itoa(i)
		a, inW := w[i]
		b, inN := n[i]
		switch {
		case !inN:
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name, Was: text(a.Name), Detail: []string{"gone (bus " + text(a.BusID) + ")"}})
			continue
		case !inW:
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name, Now: text(b.Name), Detail: []string{"new (bus " + text(b.BusID) + ")"}})
			continue
		case b.Lost && !a.Lost:
			// Its handle fails or its cells read "[GPU is lost]": what it
			// reads now is not its state.
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name, Was: text(a.Name), Now: "lost", Detail: []string{"lost (bus " + text(a.BusID) + ")"}})
			continue
		}
		if an, bn := text(a.Name), text(b.Name); an != "" && bn != "" && an != bn {
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name, Was: an, Now: bn})
		} else if au, bu := text(a.UUID), text(b.UUID); au != "" && bu != "" && au != bu {
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name, Was: au, Now: bu, Detail: []string{"another board at this index"}})
		}
		if la, lb, what := links(a, b); la != lb {
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name + " PCIe", Was: la, Now: lb, Detail: []string{what}})
		} else if wa, wb := a.PCIeWidthCurrent, b.PCIeWidthCurrent; what == "max link" && wa.Valid() && wb.Valid() && wa.Value != wb.Value {
			// The same capability, but the link trained to another width
			// (the width is not power-managed as the generation is).
			w := func(r event.Reading) string { return "x" + strconv.FormatFloat(r.Value, 'f', -1, 64) }
			out = append(out, event.HostChange{Group: GroupGPUs, Name: name + " PCIe width", Was: w(wa), Now: w(wb), Detail: []string{"current width: the link trained down (or up)"}})
		}
	}
	return out
}

// links is both GPUs' PCIe link as "Gen5 x16": the max link when both
// record it (the idle current link drops to save power), else the
// current one; "" and "" when either side lacks it.
func links(a, b event.GPU) (string, string, string) {
	if l, m := link(a.PCIeGenMax, a.PCIeWidthMax), link(b.PCIeGenMax, b.PCIeWidthMax); l != "" && m != "" {
		return l, m, "max link"
	}
	if l, m := link(a.PCIeGenCurrent, a.PCIeWidthCurrent), link(b.PCIeGenCurrent, b.PCIeWidthCurrent); l != "" && m != "" {
		return l, m, "current link (no max recorded)"
	}
	return "", "", ""
}

func link(gen, width event.Reading) string {
	if !gen.Valid() || !width.Valid() {
		return ""
	}
	return "Gen" + strconv.FormatFloat(gen.Value, 'f', -1, 64) + " x" + strconv.FormatFloat(width.Value, 'f', -1, 64)
}

func launchChanges(was, now *event.LaunchInfo) []event.HostChange {
	if was == nil || now == nil {
		return nil
	}
	var out []event.HostChange
	if a, b := strings.Join(was.Argv, " "), strings.Join(now.Argv, " "); a != b {
		out = append(out, event.HostChange{Group: GroupLaunch, Name: "command", Was: a, Now: b})
	}
	keys := slices.Sorted(maps.Keys(was.Env))
	for k := range now.Env {
		if _, ok := was.Env[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		a, inA := was.Env[k]
		b, inB := now.Env[k]
		if a == b && inA == inB {
			continue
		}
		ch := event.HostChange{Group: GroupLaunch, Name: "env " + k, Was: a, Now: b}
		if !inA {
			ch.Detail = []string{"set"}
		} else if !inB {
			ch.Detail = []string{"unset"}
		}
		out = append(out, ch)
	}
	return out
}

func text(t event.Text) string {
	if t.Status != event.CellOK {
		return ""
	}
	return t.S
}

func orDetached(b string) string {
	if b == "" {
		return "detached"
	}
	return b
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func moreWords(n int) string {
	if n <= 0 {
		return ""
	}
	return " +" + strconv.Itoa(n) + " more"
}

// CodeFirst orders paths for naming a few of them: the code first, then
// what rarely explains a speed (CI, docs, tests, configuration: ".github/",
// "docs/", "test/", "*.md", "*.yml", …), each part in its given order.
func CodeFirst(paths []string) []string {
	out := slices.Clone(paths)
	slices.SortStableFunc(out, func(a, b string) int {
		switch ra, rb := aside(a), aside(b); {
		case ra == rb:
			return 0
		case rb:
			return -1
		}
		return 1
	})
	return out
}

// aside reports whether p is CI, docs, tests or configuration.
func aside(p string) bool {
	for _, dir := range []string{".github/", ".ci/", "docs/", "doc/", "test/", "tests/", "benchmark/", "examples/"} {
		if strings.HasPrefix(p, dir) || strings.Contains(p, "/"+dir) {
			return true
		}
	}
	switch path.Ext(p) {
	case ".md", ".rst", ".txt", ".yml", ".yaml", ".toml", ".json", ".cfg", ".ini":
		return true
	}
	return false
}

// baseNames lists the base names of paths, the first n then "+K more".
func baseNames(paths []string, total, n int) string {
	total = max(total, len(paths))
	names := make([]string, 0, min(n, len(paths)))
	for i, p := range paths {
		if i == n {
			break
		}
		names = append(names, path.Base(p))
	}
	return strings.Join(names, ", ") + moreWords(total-len(names))
}
