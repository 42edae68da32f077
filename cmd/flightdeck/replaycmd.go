package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/replay"
)

type replayFlags struct {
	dir   string
	at    string
	speed int
	play  bool
	color colorFlags
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a recorded session in the cockpit, read-only, with a timeline",
		Long: `replay opens the cockpit on a journal instead of a host: the same screen, driven
by the recorded events, so the screen at time T is what the live one showed
then. Nothing is executed: keys that would act say "read-only replay".

The timeline at the bottom shows the position, the experiments and notes:
  space     play / pause           + / -    speed 1x ... 64x
  left      back 10 s              right    forward 10 s
  [ / ]     previous / next experiment start or end, or note
  t         jump to a time (h:mm:ss, mm:ss or seconds)
  q         quit
The cockpit's view keys (scroll, filter, tab, g git panel, x experiments,
? help) work as live.

FILE is a journal's path, a path relative to the journals directory, or the
start of a journal's file name there (see flightdeck journal ls).`,
		Example: `  flightdeck replay ~/.local/state/flightdeck/journals/demo/2026-11-29-101500-demo.jsonl
  flightdeck replay 2026-11-29-1015 --at 12:30 --speed 8 --play`,
		Args: gitArgs(cobra.ExactArgs(1)),
		RunE: journalRunE(func(cmd *cobra.Command, args []string) error { return runReplay(cmd.Context(), args[0], f) }),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "journals directory FILE is looked up in (default $XDG_STATE_HOME/flightdeck/journals)")
	fl.StringVar(&f.at, "at", "", "start at this time since the session's start: h:mm:ss, mm:ss, seconds or a duration (90s, 2m30s)")
	fl.IntVar(&f.speed, "speed", 1, "playback speed: 1, 2, 4, 8, 16, 32 or 64")
	fl.BoolVar(&f.play, "play", false, "start playing at once (default: paused)")
	addColorFlags(fl, &f.color)
	cmd.SetFlagErrorFunc(usageError)
	return cmd
}

func runReplay(ctx context.Context, arg string, f replayFlags) error {
	var at time.Duration
	if f.at != "" {
		var err error
		if at, err = replay.ParseClock(f.at); err != nil {
			return refusedf("--at %s", err)
		}
	}
	if f.speed < 1 || f.speed > 64 || f.speed&(f.speed-1) != 0 {
		return refusedf("--speed %d: want 1, 2, 4, 8, 16, 32 or 64", f.speed)
	}
	path, err := resolveJournal(arg, f.dir)
	if err != nil {
		return err
	}
	j, err := journal.Open(path)
	if err != nil {
		return err
	}
	defer j.Close()
	if at > j.Duration() {
		return refusedf("--at %s is past the end of %s (it lasts %s)", f.at, path, report.FormatElapsed(j.Duration()))
	}
	if err := needTerminal(); err != nil {
		return err
	}
	if p := j.Problems(); p.Any() {
		fmt.Fprintf(os.Stderr, "flightdeck: %s: skipped %s\n", path, p.String())
	}
	r := replay.New(j, tui.Options{Color: f.color.Mode()}, replay.Options{At: at, Play: f.play, Speed: f.speed, History: replayHistory(path, j.Header(), f.dir)})
	return replay.Run(ctx, r)
}

// replayHistory is the history of the replayed journal's host before it
// (the journals of that host created earlier, in dir or the default
// directory), nil when there is none or it cannot be listed: the panel
// then lists the journal alone.
func replayHistory(path string, h event.SessionHeader, dir string) *event.History {
	d, err := journalDir(dir)
	if err != nil {
		return nil
	}
	hist, err := history.Collect(d, h.Host, history.Own{Path: path}, 0)
	if err != nil {
		return nil
	}
	kept := hist.Journals[:0]
	for _, j := range hist.Journals {
		if j.Header.Created.Before(h.Created) {
			kept = append(kept, j)
		}
	}
	hist.Journals = kept
	if len(kept) == 0 {
		return nil
	}
	return &hist
}
