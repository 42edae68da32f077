package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// The export verb: flightdeck journal export as Markdown, CSV or JSON, to
// stdout or to a file written whole.

type journalExportFlags struct {
	dir      string
	format   string
	baseline string
	samples  string
	out      string
}

func newJournalExportCmd() *cobra.Command {
	var f journalExportFlags
	cmd := &cobra.Command{
		Use:   "export FILE --format md|csv|json",
		Short: "Export a journal: a Markdown report, the tok/s or GPU samples as CSV, or JSON",
		Long: `export writes a journal as:

  md    a report that tells the session's story: the experiment table (commit,
        profile, tok/s median with its 95 % confidence interval, change against
        the baseline), what changed from one experiment to the next, each
        experiment's hypothesis, conclusion and fingerprint, and the notes;
  csv   the tok/s samples, one row per sample (--samples tok, the default:
        t_s,time,exp,name,tok_s,accept_length,steady), or the GPU samples, one
        row per GPU per sample (--samples gpu); pandas reads either with
        pd.read_csv(path) and no options; values nvidia-smi could not give are
        empty cells, never 0;
  json  the header, experiments (fingerprint, result, delta) and notes.

--baseline EXP (an id or a name) is the experiment deltas are relative to;
default the first one with a result. -o writes to a file (replaced whole,
never left half-written) instead of stdout.`,
		Example: `  flightdeck journal export 2026-11-29-101500-demo --format md -o report.md
  flightdeck journal export 2026-11-29-101500-demo --format csv --samples gpu -o gpus.csv
  flightdeck journal export 2026-11-29-101500-demo --format json --baseline e2`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error { return runJournalExport(cmd, args[0], f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	fl.StringVar(&f.format, "format", "", "md, csv or json (required)")
	fl.StringVar(&f.baseline, "baseline", "", "experiment (id or name) the deltas are relative to (default: the first with a result)")
	fl.StringVar(&f.samples, "samples", "tok", "with --format csv: tok (tok/s samples) or gpu (GPU samples)")
	fl.StringVarP(&f.out, "output", "o", "", "write to this file instead of stdout")
	return cmd
}

func runJournalExport(cmd *cobra.Command, arg string, f journalExportFlags) error {
	switch f.format {
	case "md", "csv", "json":
	case "":
		return refusedf("--format is required: md, csv or json")
	default:
		return refusedf("--format %q: want md, csv or json", f.format)
	}
	switch f.samples {
	case "tok", "gpu":
	default:
		return refusedf("--samples %q: want tok or gpu", f.samples)
	}
	if cmd.Flags().Changed("samples") && f.format != "csv" {
		return refusedf("--samples goes with --format csv")
	}
	if f.baseline != "" && f.format == "csv" {
		return refusedf("--baseline goes with --format md or json (the CSV has no deltas)")
	}
	lj, err := openJournal(arg, f.dir)
	if err != nil {
		return err
	}
	defer lj.Close()
	withEarlier(lj, f.dir, cmd.ErrOrStderr())
	if _, err := lj.report.Baseline(f.baseline); err != nil {
		return refusedf("--baseline: %v", err)
	}
	if pr := lj.problems; pr.Any() {
		// What was skipped is not in the export: say so, as show and ls do.
		fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: %s: skipped %s\n", lj.path, sanitize.String(pr.String()))
	}
	write := func(w io.Writer) error {
		abs, err := filepath.Abs(lj.path)
		if err != nil {
			abs = lj.path
		}
		opts := report.ReportOptions{Baseline: f.baseline, Path: abs}
		switch f.format {
		case "md":
			return report.WriteMarkdown(w, lj.report, opts)
		case "json":
			return report.WriteJSON(w, lj.report, opts)
		}
		if f.samples == "gpu" {
			return report.WriteGPUCSV(w, lj.report.Header, lj.j.Scan)
		}
		return report.WriteCSV(w, lj.report)
	}
	if f.out == "" || f.out == "-" {
		return write(cmd.OutOrStdout())
	}
	if err := writeFileAtomic(f.out, write); err != nil {
		return outputError{f.out, err}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: wrote %s\n", f.out)
	return nil
}

// outputError is a failure to write -o FILE: an I/O error (exit 1, never
// "input refused", even when the directory does not exist), named by the
// path the user gave rather than the temporary file written first.
type outputError struct {
	path string
	err  error
}

func (e outputError) Error() string {
	err := e.err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	msg := err.Error()
	if errors.Is(err, fs.ErrNotExist) {
		msg = "no such directory: " + filepath.Dir(e.path)
		if fi, serr := os.Stat(filepath.Dir(e.path)); serr == nil && fi.IsDir() {
			msg = "cannot create a file in " + filepath.Dir(e.path) // /proc, say
		}
	}
	return "write " + e.path + ": " + msg
}

// writeFileAtomic writes a file through a temporary file in the same
// directory renamed over it, so that a failed export never leaves half a
// file (or destroys the previous one).
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory")
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// The temporary file's 0600 stays: an export holds what the journal
	// holds (a dirty patch may contain secrets), and journals are 0600.
	return os.Rename(tmp.Name(), path)
}
