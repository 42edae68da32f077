// Package history is what earlier cockpit sessions recorded about a host:
// the journals written for it (Find, newest first), each folded whole on
// demand (Load), and the names that qualify an experiment of another
// journal ("2026-12-01-101500-demo:e3", Qualify and Split).
//
// A host is named as the journal header's Host names it (remote.Host.Name:
// "gpu-box", "root@10.1.2.3:22", "local", "simulated host"). Journals are
// read, never written, here.
package history

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// Journal is one journal recorded for a host, as Find lists it: its path,
// its header (the session that created it) and its last modification.
type Journal struct {
	Path    string
	Header  event.SessionHeader
	ModTime time.Time
}

// Name is the journal's short name, what Qualify puts before an
// experiment id: the file's base name without ".jsonl"
// ("2026-12-01-101500-demo").
func (j Journal) Name() string { return Name(j.Path) }

// Name is the short name of the journal at path: its base name without
// ".jsonl".
func Name(path string) string { return strings.TrimSuffix(filepath.Base(path), ".jsonl") }

// Find lists the journals under dir (every sub-directory) whose header
// names host, and the files of extra that exist and do (the session's own
// --journal file, which may lie elsewhere), each path once, newest first
// by the session start their header records (Created; the modification
// time breaks ties): a journal copied without its times keeps its place.
// Files that are not journals, or cannot be read, are skipped (FindAll
// names them). It errors only when dir exists and cannot be walked. A dir
// that does not exist lists nothing.
func Find(dir, host string, extra ...string) ([]Journal, error) {
	js, _, err := FindAll(dir, host, extra...)
	return js, err
}

// find is Find with keep choosing the journals (all with nil).
func find(dir string, keep func(event.SessionHeader) bool, extra ...string) ([]Journal, error) {
	js, _, err := findAll(dir, keep, extra...)
	return js, err
}

// FindAll is Find, and the files it skipped because they could not be
// read, one line each ("/j/x.jsonl: permission denied"; a sub-directory
// that could not be walked too). Files that are journals of another host,
// or not journals, are not skipped: they are not the host's.
func FindAll(dir, host string, extra ...string) (js []Journal, skipped []string, err error) {
	return findAll(dir, func(h event.SessionHeader) bool { return h.Host == host }, extra...)
}

// findAll is FindAll with keep choosing the journals (all with nil).
func findAll(dir string, keep func(event.SessionHeader) bool, extra ...string) (js []Journal, skipped []string, err error) {
	var paths []string
	if dir != "" {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir {
					if errors.Is(err, fs.ErrNotExist) {
						return fs.SkipAll
					}
					return err
				}
				skipped = append(skipped, err.Error()) // an unreadable sub-directory: skip it
				return nil
			}
			if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl") {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, skipped, fmt.Errorf("history: %w", err)
		}
	}
	for _, p := range extra {
		if p != "" {
			paths = append(paths, p)
		}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil || seen[abs] {
			continue
		}
		seen[abs] = true
		fi, err := os.Stat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue // an extra that does not exist (yet)
		}
		if err != nil {
			skipped = append(skipped, err.Error())
			continue
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		h, err := journal.ReadHeader(abs)
		switch {
		case errors.Is(err, journal.ErrNotJournal):
			continue // not a journal: no host's
		case err != nil:
			skipped = append(skipped, err.Error())
			continue
		case keep != nil && !keep(h):
			continue
		}
		js = append(js, Journal{Path: abs, Header: h, ModTime: fi.ModTime()})
	}
	slices.SortStableFunc(js, func(a, b Journal) int {
		if c := b.Header.Created.Compare(a.Header.Created); c != 0 {
			return c
		}
		return b.ModTime.Compare(a.ModTime)
	})
	return js, skipped, nil
}

// Load reads the journal at path whole and folds it (report.ReadReport):
// its sessions, experiments, notes and checkout moves. A journal being
// written now (journal.Live) keeps its open experiment open. The
// journal's skipped lines (a torn last line, garbled ones) are in the
// returned Problems; err is only for a file that cannot be opened or
// read.
func Load(path string) (*report.Report, journal.Problems, error) {
	j, err := journal.Open(path)
	if err != nil {
		return nil, journal.Problems{}, err
	}
	defer j.Close()
	r, err := report.ReadReport(j.Header(), j.ScanLight, journal.Live(path)) // the report reads no GPU rows or log lines
	if err != nil {
		return nil, j.Problems(), fmt.Errorf("history: read %s: %w", path, err)
	}
	return r, j.Problems(), nil
}

// Qualify names experiment id of the journal named name (Name) for use
// outside it: "2026-12-01-101500-demo:e3".
func Qualify(name, id string) string { return name + ":" + id }

// Split undoes Qualify: "2026-12-01-101500-demo:e3" is journal
// "2026-12-01-101500-demo" and id "e3"; ok is false for a name without a
// journal part (an experiment of the session's own journal: "e3",
// "baseline", a name). The journal part may be a path ("runs/a.jsonl:e3")
// or a prefix of a journal's Name; the id is what follows the last ':'.
func Split(s string) (journalPart, id string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

// Match returns the journal of js that part names: a path (equal after
// filepath.Abs), a Name, or a prefix of exactly one journal's Name. It
// errors for a part that names none, or a prefix of several (listing
// them).
func Match(js []Journal, part string) (Journal, error) {
	if abs, err := filepath.Abs(part); err == nil {
		for _, j := range js {
			if j.Path == abs {
				return j, nil
			}
		}
	}
	var hits []Journal
	for _, j := range js {
		if j.Name() == part || j.Name() == strings.TrimSuffix(part, ".jsonl") {
			return j, nil
		}
		if strings.HasPrefix(j.Name(), part) {
			hits = append(hits, j)
		}
	}
	switch len(hits) {
	case 0:
		return Journal{}, fmt.Errorf("no journal %q", part)
	case 1:
		return hits[0], nil
	}
	names := make([]string, len(hits))
	for i, j := range hits {
		names[i] = j.Name()
	}
	return Journal{}, fmt.Errorf("%q names %d journals: %s", part, len(hits), strings.Join(names, ", "))
}

// All lists every journal under dir, whatever its host, newest first (as
// Find does for one host): what Match picks a journal part of a qualified
// name from. A dir that does not exist lists nothing.
func All(dir string) ([]Journal, error) { return find(dir, nil) }

// Earlier returns the experiments of the host's journals under dir
// (Find) that were created before the journal at path, other than it, with
// qualified ids (QualifyAll), the oldest journal first: what a report of
// that journal compares against (its verdicts' A/A noise and launches; see
// report.Report.Earlier). At most limit journals are read (DefaultLimit
// when 0), the newest of them. A journal that cannot be read is left out
// and named in skipped; err is Find's.
func Earlier(dir, host, path string, created time.Time, limit int) (exps []ledger.Experiment, skipped []string, err error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	js, err := Find(dir, host)
	if err != nil {
		return nil, nil, err
	}
	abs, _ := filepath.Abs(path)
	var picked []Journal
	for _, j := range js {
		if j.Path != abs && j.Header.Created.Before(created) && len(picked) < limit {
			picked = append(picked, j)
		}
	}
	slices.SortStableFunc(picked, func(a, b Journal) int { return a.Header.Created.Compare(b.Header.Created) })
	for _, j := range picked {
		r, _, err := Load(j.Path)
		if err != nil {
			skipped = append(skipped, j.Name()+": "+err.Error())
			continue
		}
		exps = append(exps, QualifyAll(j.Name(), r.Ledger.Experiments())...)
	}
	return exps, skipped, nil
}
