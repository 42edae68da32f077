package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestDemoJournalInTmux: the real binary records the demo in the journal
// it was given; a second demo on the same journal is refused before its
// screen opens, naming the first; quitting ends the open experiment (the
// exp-end is in the file) and prints the journal's path and how to replay
// it; --no-journal writes nothing.
func TestDemoJournalInTmux(t *testing.T) {
	bin := flightdeckBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions", "bisect.jsonl")
	s := startTmux(t, 200, 45, bin+" demo --journal "+path)
	s.waitScreen(30*time.Second, func(screen string) string {
		if !readyHeader.MatchString(screen) {
			return "header does not say the server is ready"
		}
		return ""
	})

	second := startTmux(t, 160, 20, bin+" demo --journal "+path)
	screen := second.waitScreen(15*time.Second, func(screen string) string {
		if !strings.Contains(screen, "EXIT STATUS") {
			return "the second demo did not exit"
		}
		return ""
	})
	if !strings.Contains(screen, "journal "+path+" is being written by flightdeck pid") || !strings.Contains(screen, "EXIT STATUS 1") {
		t.Errorf("second cockpit on the same journal:\n%s", screen)
	}

	s.quit()
	screen = s.tmux("capture-pane", "-p", "-J", "-t", "e2e") // -J: wrapped lines joined
	if !strings.Contains(screen, "journal: "+path+" (replay: flightdeck replay "+path+")") {
		t.Errorf("no journal line at exit:\n%s", screen)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var start *event.ExperimentStart
	var end *event.ExperimentEnd
	j.Scan(func(e event.Event) error {
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			if start == nil {
				start = &p
			}
		case event.ExperimentEnd:
			end = &p
		}
		return nil
	})
	if start == nil || start.Trigger != event.TriggerLaunch || end == nil || end.Exp != start.ID || end.Trigger != event.TriggerQuit {
		t.Errorf("experiment start %+v end %+v: want the launch's experiment ended by quitting", start, end)
	}
	if h := j.Header(); h.Label != "demo" || h.PID == 0 || h.Flightdeck == "" {
		t.Errorf("header %+v", h)
	}

	// --no-journal: nothing under the state directory.
	state := t.TempDir()
	n := startTmux(t, 160, 45, "XDG_STATE_HOME="+state+" "+bin+" demo --no-journal")
	n.waitScreen(30*time.Second, func(screen string) string {
		if !strings.Contains(screen, "Decode batch") {
			return "no decode log lines"
		}
		return ""
	})
	n.quit()
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("--no-journal wrote %v", ents)
	}
	if strings.Contains(n.capture(), "journal:") {
		t.Errorf("--no-journal printed a journal line:\n%s", n.capture())
	}
}
