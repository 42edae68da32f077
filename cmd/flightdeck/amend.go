package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// amendJournal changes the journal at path afterwards, as a cockpit's key
// would have: it appends a session (this command, labelled label, of the
// journal's host) and runs act on it, whose actions are recorded there.
// A journal a cockpit is writing is refused (its *journal.LockedError, as
// a refusal); other errors are I/O errors or act's.
func amendJournal(ctx context.Context, path, host, label string, act func(*sessions.Session) error) error {
	s, err := sessions.Open(sessions.Options{Name: host, Version: versionString(),
		Journal: sessions.JournalOptions{File: path, MustExist: true}, Header: event.SessionHeader{Host: host, Label: label}})
	if err != nil {
		var locked *journal.LockedError
		if errors.As(err, &locked) {
			return refusedf("%v", locked)
		}
		return err
	}
	if err := s.Attach(ctx, sessions.AttachOptions{}); err != nil {
		s.Abandon()
		return err
	}
	err = act(s)
	if cerr := s.Close(context.WithoutCancel(ctx), nil); err == nil {
		err = cerr
	}
	return err
}

// liveRefusal is the refusal of a change to a journal a cockpit is writing.
func liveRefusal(path, there string) error {
	return refusedf("%s is being written by a running cockpit: %s, or after it quits", path, there)
}

func newJournalNoteCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "note FILE TEXT",
		Short: "Add a note to a journal afterwards (the cockpit's n)",
		Long: `note appends a timestamped note to the journal FILE (a path, or a name in the
journals directory, as journal show takes it): the cockpit's n key, written
afterwards ("the pull between e2 and e3 brought 3207427"). journal show, the
exports and replay list it at the time it was written.

A journal a cockpit is writing now is refused: press n there.

Exit statuses: 0 written; 1 an I/O error; 2 input refused: no such journal,
a live one, an empty note, a usage error.`,
		Example: `  flightdeck journal note 2026-11-29-101500-demo "e3 ran after a git pull: 3207427"`,
		Args:    gitArgs(cobra.ExactArgs(2)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			text := strings.TrimSpace(args[1])
			if text == "" {
				return refusedf("an empty note: give its text")
			}
			path, err := resolveJournal(args[0], dir)
			if err != nil {
				return err
			}
			if journal.Live(path) {
				return liveRefusal(path, "press n there")
			}
			lj, err := loadJournal(path)
			if err != nil {
				return err
			}
			host := lj.report.Header.Host
			lj.Close()
			var n event.Note
			err = amendJournal(cmd.Context(), path, host, "journal note", func(s *sessions.Session) (err error) {
				n, err = s.Note(cmd.Context(), text)
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "note added to %s: %s\n", sanitize.String(path), n.Text)
			return nil
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	return cmd
}

func newJournalConcludeCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "conclude FILE EXP TEXT",
		Short: "Write (or replace) an experiment's conclusion afterwards (the cockpit's w)",
		Long: `conclude writes TEXT as the conclusion of experiment EXP (an id, e2, or a
name, as journal diff takes them) of the journal FILE, replacing the one it
had: the cockpit's w key in its x panel, written afterwards. journal show,
diff and the exports show it.

A journal a cockpit is writing now is refused: press w there.

Exit statuses: 0 written; 1 an I/O error; 2 input refused: no such journal,
a live one, an unknown experiment, an empty conclusion, a usage error.`,
		Example: `  flightdeck journal conclude 2026-11-29-101500-demo e3 "the regression is 3207427, not the profile"`,
		Args:    gitArgs(cobra.ExactArgs(3)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error {
			text := strings.TrimSpace(args[2])
			if text == "" {
				return refusedf("an empty conclusion: give its text")
			}
			path, err := resolveJournal(args[0], dir)
			if err != nil {
				return err
			}
			if journal.Live(path) {
				return liveRefusal(path, "press w in its x panel")
			}
			lj, err := loadJournal(path)
			if err != nil {
				return err
			}
			x := lj.report.Ledger.Find(args[1])
			if x == nil {
				lj.Close()
				return refusedf("no experiment %q in %s (have %s)", sanitize.OneLine(args[1]), path, lj.report.ExpList())
			}
			id, name, host := x.ID, x.Name, lj.report.Header.Host
			lj.Close()
			err = amendJournal(cmd.Context(), path, host, "journal conclude", func(s *sessions.Session) error {
				return s.UpdateExperiment(cmd.Context(), event.ExperimentUpdate{Exp: id, Conclusion: text})
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "conclusion of %s %q in %s: %s\n", sanitize.OneLine(id), sanitize.OneLine(name), sanitize.String(path), sanitize.OneLine(text))
			return nil
		}),
	}
	cmd.Flags().StringVar(&dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	return cmd
}
