package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

func newJournalCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		RunE:  runGroup,
		Short: "List, show and export the session journals the cockpit records",
		Long: `Every cockpit session (connect, demo) is recorded in a journal: one JSON Lines
file under $XDG_STATE_HOME/flightdeck/journals/<host>/ (default
~/.local/state/flightdeck/journals), holding every event the screen saw and
the experiments (e), their fingerprints and results, and the notes (n).

FILE is a journal's path, a path relative to the journals directory, or
the start of a journal's file name there ("2026-11-29-1015" is enough when
only one journal starts so).

Exit statuses: 0 success; 1 failure (an I/O error); 2 input refused: no
such journal, an ambiguous name, a file that is not a journal or is of a
newer format, an unknown experiment (or no baseline marked), a usage
error.

The format: docs/journal-format.md. Replay a journal: flightdeck replay FILE.`,
		Example: `  flightdeck journal ls
  flightdeck journal ls --host gpu-box
  flightdeck journal show 2026-11-29-101500-demo
  flightdeck journal show 2026-11-29-101500-demo e2
  flightdeck journal diff 2026-11-29-101500-demo baseline e3
  flightdeck journal diff 2026-11-24-101500-demo:e1 2026-11-29-101500-demo:e3
  flightdeck journal export 2026-11-29-101500-demo --format md -o report.md
  flightdeck journal export 2026-11-29-101500-demo --format csv -o tok.csv`,
	}
	cmd.SetFlagErrorFunc(usageError)
	cmd.AddCommand(newJournalLsCmd(), newJournalShowCmd(), newJournalDiffCmd(), newJournalExportCmd())
	cmd.AddCommand(newJournalBaselineCmd(), newJournalNoteCmd(), newJournalConcludeCmd())
	return cmd
}

// journalRunE wraps a journal subcommand (and replay): input refused (no
// such file, an ambiguous name, not a journal, a newer format, an unknown
// experiment, a bad flag value) prints its reason and exits 2; other errors
// are sanitised for main to print.
func journalRunE(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return refusingRunE(func(err error) bool {
		var ver *journal.VersionError
		return errors.As(err, &ver) || errors.Is(err, journal.ErrNotJournal) || errors.Is(err, fs.ErrNotExist)
	}, run)
}

// journalDir is --dir, or the default journals directory.
func journalDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return journal.DefaultDir()
}

// resolveJournal finds the journal an argument names: a path to a file; a
// path relative to dir; or the unique journal under dir whose file name
// (or path relative to dir) starts with arg.
func resolveJournal(arg, dir string) (string, error) {
	if arg == "" {
		return "", refusedf("no journal named: give a FILE (see flightdeck journal ls)")
	}
	if fi, err := os.Stat(arg); err == nil {
		if fi.IsDir() {
			return "", refusedf("%s is a directory, not a journal (see flightdeck journal ls --dir %s)", arg, arg)
		}
		return arg, nil
	}
	if dir == "" {
		d, err := journal.DefaultDir()
		if err != nil {
			return "", refusedf("journal %s: no such file (and no journals directory: %v)", arg, err)
		}
		dir = d
	}
	if !filepath.IsAbs(arg) {
		p := filepath.Join(dir, arg)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	files, _ := listJournalFiles(dir)
	var hits []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		if strings.HasPrefix(filepath.Base(f), arg) || strings.HasPrefix(rel, arg) {
			hits = append(hits, f)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return "", refusedf("journal %s: no such file, and no journal in %s starts with it (see flightdeck journal ls)", arg, dir)
	}
	var names []string
	for _, h := range hits[:min(len(hits), 5)] {
		rel, _ := filepath.Rel(dir, h)
		names = append(names, rel)
	}
	more := ""
	if len(hits) > 5 {
		more = fmt.Sprintf(", and %d more", len(hits)-5)
	}
	return "", refusedf("journal %s is ambiguous: %d journals start with it (%s%s)", arg, len(hits), strings.Join(names, ", "), more)
}

// listJournalFiles returns the *.jsonl files under dir, in lexical order.
// A missing dir has none.
func listJournalFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable sub-directory: skip it
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// loadedJournal is a journal read whole.
type loadedJournal struct {
	path     string
	j        *journal.Journal
	report   *report.Report
	live     bool
	problems journal.Problems
}

// loadJournal opens the journal at path and folds it into a report. An
// experiment still open at the end is "ended by crash" unless the journal
// is live (being written now).
func loadJournal(path string) (*loadedJournal, error) {
	j, err := journal.Open(path)
	if err != nil {
		return nil, err
	}
	live := journal.Live(path)
	r, err := report.ReadReport(j.Header(), j.ScanLight, live) // the report reads no GPU rows or log lines
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &loadedJournal{path: path, j: j, report: r, live: live, problems: j.Problems()}, nil
}

func (l *loadedJournal) Close() error { return l.j.Close() }

// openJournal resolves arg (see resolveJournal) and loads the journal it
// names (see loadJournal).
func openJournal(arg, dir string) (*loadedJournal, error) {
	path, err := resolveJournal(arg, dir)
	if err != nil {
		return nil, err
	}
	return loadJournal(path)
}

// withEarlier gives lj's report the experiments of the host's earlier
// journals (earlierOf), so that its verdicts pool launches and A/A noise
// as the cockpit's x panel does.
func withEarlier(lj *loadedJournal, dir string, errOut io.Writer) {
	lj.report.Earlier = earlierOf(lj, dir, errOut)
}

// earlierOf returns the experiments, with qualified ids, of the journals
// of lj's host under the journals directory (dir, else the default)
// created before lj (history.Earlier), leaving out those named in skip
// (journal names: a diff's other journal, pooled already). What could not
// be read is said on errOut; a missing directory gives nothing.
func earlierOf(lj *loadedJournal, dir string, errOut io.Writer, skip ...string) []ledger.Experiment {
	d, err := journalDir(dir)
	if err != nil {
		return nil
	}
	h := lj.report.Header
	exps, skipped, err := history.Earlier(d, h.Host, lj.path, h.Created, 0)
	if err != nil {
		fmt.Fprintf(errOut, "flightdeck: the host's earlier journals: %s\n", sanitize.String(err.Error()))
		return nil
	}
	for _, s := range skipped {
		fmt.Fprintf(errOut, "flightdeck: skipped an earlier journal: %s\n", sanitize.String(s))
	}
	if len(skip) > 0 {
		exps = slices.DeleteFunc(exps, func(x ledger.Experiment) bool {
			j, _, _ := history.Split(x.ID)
			return slices.Contains(skip, j)
		})
	}
	return exps
}
