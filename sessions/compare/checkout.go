package compare

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// PatchText summarises a checkout's dirty state: "clean", or "1.2 KiB
// sha256:0123456789ab" (cut patches say so: "(stored cut at 4.0 MiB)",
// ledger.MaxPatch).
func PatchText(g *event.GitState) string {
	if g.PatchBytes == 0 && g.PatchSHA256 == "" {
		return "clean"
	}
	s := FormatBytes(int64(g.PatchBytes)) + " sha256:" + ShortHash(g.PatchSHA256)
	if g.PatchTruncated {
		s += " (stored cut at " + FormatBytes(ledger.MaxPatch) + ")"
	}
	return s
}

// DiffStatSummary is a patch's DiffStat in a few words: "2 files, +12
// -3" ("1 binary" when some are binary); "" for no patch.
func DiffStatSummary(patch string) string {
	st := DiffStat(patch)
	if len(st) == 0 {
		return ""
	}
	add, del, bin := 0, 0, 0
	for _, f := range st {
		add, del = add+f.Added, del+f.Deleted
		if f.Binary {
			bin++
		}
	}
	files := "1 file"
	if len(st) != 1 {
		files = strconv.Itoa(len(st)) + " files"
	}
	s := fmt.Sprintf("%s, +%d -%d", files, add, del)
	if bin > 0 {
		s += ", " + strconv.Itoa(bin) + " binary"
	}
	return s
}

// FileChange is one file of a patch's diffstat.
type FileChange struct {
	Path           string // the new path ("b/…" without the prefix), sanitised (sanitize.Name)
	Added, Deleted int    // lines
	Binary         bool   // a binary change: no line counts
}

// DiffStat summarises a `git diff` patch per file, in patch order: lines
// added and deleted ("+"/"-" lines of the hunks, not the "+++"/"---"
// headers), binary changes marked. A cut patch (GitState.PatchTruncated)
// gives the stat of what was stored. Text that is not a patch gives none.
func DiffStat(patch string) []FileChange {
	var out []FileChange
	inHunk := false
	for line := range strings.Lines(patch) {
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "diff --git "):
			p := line[len("diff --git "):]
			if i := strings.LastIndex(p, " b/"); i >= 0 {
				p = p[i+3:]
			}
			out = append(out, FileChange{Path: sanitize.Name(p)})
			inHunk = false
		case len(out) == 0:
		case strings.HasPrefix(line, "@@"):
			inHunk = true
		case strings.HasPrefix(line, "GIT binary patch") || strings.HasPrefix(line, "Binary files "):
			out[len(out)-1].Binary = true
		case inHunk && strings.HasPrefix(line, "+"):
			out[len(out)-1].Added++
		case inHunk && strings.HasPrefix(line, "-"):
			out[len(out)-1].Deleted++
		}
	}
	return out
}

// ShortHash returns the first 12 hex digits of a hash ("" stays "").
func ShortHash(h string) string {
	return sanitize.OneLine(h[:min(12, len(h))])
}

// maxFilesNamed is how many changed files FilesText names.
const maxFilesNamed = 4

// FilesText is total changed files as "5 files: pynccl.py,
// parallel_state.py, ..." (the base names of the first maxFilesNamed of
// paths).
func FilesText(paths []string, total int) string {
	files := paths[:min(len(paths), maxFilesNamed)]
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = path.Base(f)
	}
	s := strconv.Itoa(total) + " files: "
	if total == 1 {
		s = "1 file: "
	}
	s += strings.Join(names, ", ")
	if total > len(files) {
		s += ", ..."
	}
	return s
}

// BranchText is a branch as the comparisons and the reports write it:
// "(detached)" for none (a detached HEAD).
func BranchText(branch string) string {
	if branch == "" {
		return "(detached)"
	}
	return branch
}

// FormatBytes formats a size as "512 B", "1.2 KiB", "3.4 MiB".
func FormatBytes(n int64) string {
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}
