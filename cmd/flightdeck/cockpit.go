package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/tui"
)

// journalFlags are the journal options of the commands that record a
// session (connect, demo, server repeat, experiment start).
type journalFlags struct {
	file string // --journal: append to (or create) this file
	off  bool   // --no-journal
	name string // --name: the session's name, in the file name and header
}

func addJournalFlags(fl *pflag.FlagSet, f *journalFlags) {
	fl.StringVar(&f.file, "journal", "", "record the session in this journal (appended to when it exists; default a new file under $XDG_STATE_HOME/flightdeck/journals/<host>/)")
	fl.BoolVar(&f.off, "no-journal", false, "record nothing (no experiments then: e and n need a journal)")
	fl.StringVar(&f.name, "name", "", "session name, in the journal's file name and header")
}

// options are the flags as the session's journal options.
func (f journalFlags) options() sessions.JournalOptions {
	return sessions.JournalOptions{File: f.file, Off: f.off, Name: f.name}
}

// check refuses contradictory flags before anything is set up.
func (f journalFlags) check() error { return f.options().Check() }

// lockFlags are the driver lock's flags of the commands that drive a host
// as a cockpit (connect, demo, server repeat).
type lockFlags struct {
	takeOver  bool
	heartbeat time.Duration // hidden: tests and slow links
	stale     time.Duration // hidden
}

func addLockFlags(fl *pflag.FlagSet, f *lockFlags) {
	fl.BoolVar(&f.takeOver, "take-over", false, "drive the host even when another cockpit drives it (that one becomes read-only)")
	fl.DurationVar(&f.heartbeat, "lock-heartbeat", 0, "driver lock heartbeat period (default 5s)")
	fl.DurationVar(&f.stale, "lock-stale", 0, "a driver lock without a heartbeat for this long is taken over (default 30s)")
	_ = fl.MarkHidden("lock-heartbeat")
	_ = fl.MarkHidden("lock-stale")
}

// driving is the session's driver options for a command that drives the
// host as a cockpit: it holds the lock.
func (f lockFlags) driving() sessions.DriverOptions {
	return sessions.DriverOptions{Mode: sessions.DriverTake, TakeOver: f.takeOver, Heartbeat: f.heartbeat, StaleAfter: f.stale}
}

// cockpitOptions gives the screen the session's actions: server control,
// the benchmark and the take-over always; the git panel's actions with a
// checkout (hasRepo); experiments, notes, the baseline and the repeat with
// a journal; the bisect with both.
func cockpitOptions(o tui.Options, s *sessions.Session, hasRepo bool) tui.Options {
	o.Control, o.Bench, o.Driver, o.Link = s, s, s, s
	if hasRepo {
		o.Git = s
	}
	if s.Journaled() {
		o.Experiments, o.Measure, o.Repeat = s, s, s
		if hasRepo {
			o.Bisect = s // each launch is an experiment, each step a journal record
		}
	}
	return o
}

// runCockpit runs the screen over the session s and, beside it, run: what
// publishes the host's events (s.Run, after any set-up it needs). The
// screen opens at once; it closes when the user quits, when ctx ends, or
// when run fails, whose error is then returned. Quitting stops the probes,
// never the inference server: it ends the open experiment, then stops the
// probes, then lets the recorder drain the stream and closes the journal,
// so that the exp-end is in the file (sessions.Session.Close). The
// journal's path is printed on stderr at the end.
func runCockpit(ctx context.Context, s *sessions.Session, opts tui.Options, run func(ctx context.Context) error) error {
	// The screen's subscription ends with the screen, so that events
	// published while the journal is finished never wait for it.
	uiCtx, uiCancel := context.WithCancel(ctx)
	defer uiCancel()
	events := s.Subscribe(uiCtx, 4096)
	s.LoadHistory() // the host's earlier experiments, in the background
	rctx := s.Start(ctx, run)

	screenOpen.Store(true)
	uiErr := tui.Run(rctx, tui.New(opts), events)
	screenOpen.Store(false)
	uiCancel()
	if !s.WaitRepeat(100 * time.Millisecond) {
		// The screen ended (a signal, or q pressed again) while a repeat
		// was relaunching: let that launch finish, or the server stays
		// killed. Its kill waits for GPU memory (2 min at most).
		fmt.Fprintln(os.Stderr, "flightdeck: waiting for the repeat's relaunch in flight to finish (at most 3 min) ...")
		if !s.WaitRepeat(3 * time.Minute) {
			fmt.Fprintln(os.Stderr, "flightdeck: the relaunch did not finish in 3 min: check the server (flightdeck server status)")
		}
	}
	err := s.Close(rctx, uiErr)
	if p := s.JournalPath(); p != "" {
		fmt.Fprintf(os.Stderr, "journal: %s (replay: flightdeck replay %s)\n", p, shellQuote(p))
	}
	return err
}

// shellQuote is path as one shell word for a command line to copy, or
// sanitised as is when no shell word can carry it.
func shellQuote(path string) string {
	if q, err := remote.Quote(path); err == nil {
		return q
	}
	return sanitize.String(path)
}
