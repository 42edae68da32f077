package experiments

import (
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

var t0 = time.Date(2025, 10, 22, 10, 27, 0, 0, time.UTC)

// threeEnded is a panel over e1, e2 and e3, each ended by a key, with a
// result for e1 and e3; flashes go to *said.
func threeEnded(said *string) *Panel {
	p := NewPanel(nil)
	p.Flash = func(text string, _ style.Token) { *said = text }
	lo, hi := 80.0, 84.0
	for i, id := range []string{"e1", "e2", "e3"} {
		at := t0.Add(time.Duration(10*i) * time.Second)
		p.Apply(event.Event{At: at, Data: event.ExperimentStart{ID: id, Name: "try " + id, Trigger: event.TriggerKey}})
		end := event.ExperimentEnd{Exp: id, Trigger: event.TriggerKey}
		if id != "e2" {
			end.Result = event.ExperimentResult{N: 8, Median: 82, Lo: &lo, Hi: &hi}
		}
		p.Apply(event.Event{At: at.Add(5 * time.Second), Data: end})
	}
	return p
}

// TestKeysSayWhyBeforeTheyAct: closed, the panel's keys ask for it;
// open without experiments, they say there are none.
func TestKeysSayWhyBeforeTheyAct(t *testing.T) {
	p := NewPanel(nil)
	for _, b := range p.Bindings() {
		if why := b.Why(); why != "open the experiments panel first (x)" {
			t.Errorf("%s closed: %q", b.Help().Key, why)
		}
	}
	p.Open = true
	if why := p.MarkKey.Why(); why != "no experiments yet: e starts one" {
		t.Errorf("space, no experiments: %q", why)
	}
	if why := p.ConcludeKey.Why(); why != NoJournalText {
		t.Errorf("w without a journal: %q", why)
	}
	p.ReadOnly = func(what string) string { return "read-only replay: " + what + " would change the journal" }
	if why := p.BaselineKey.Why(); why != "read-only replay: a baseline would change the journal" {
		t.Errorf("B in a replay: %q", why)
	}
}

// TestMarksChooseThePair: space marks up to two experiments, and c
// compares the two marked (the older as A), else the cursor's against the
// first with a result.
func TestMarksChooseThePair(t *testing.T) {
	var said string
	p := threeEnded(&said)
	p.Open = true
	if a, b, aWhy, bWhy, why := p.comparePair(); a != "e1" || b != "e3" || aWhy != "first with a result" || bWhy != "selected" || why != "" {
		t.Errorf("nothing marked: %q %q %q %q %q", a, b, aWhy, bWhy, why)
	}
	p.Act(&p.MarkKey) // e3, the newest
	p.Move(-1)
	p.Act(&p.MarkKey) // e2
	if said != "marked e3 and e2: c compares them" || len(p.Marked()) != 2 {
		t.Errorf("two marked: %q %q", said, p.Marked())
	}
	if a, b, _, _, _ := p.comparePair(); a != "e2" || b != "e3" {
		t.Errorf("two marked: %q vs %q", a, b)
	}
	p.Home()
	p.Act(&p.MarkKey)
	if said != "two are marked already (e3, e2): space on one unmarks it" {
		t.Errorf("a third: %q", said)
	}
	// c hands the pair to the compare view, with the experiments.
	var got []string
	p.Compare = func(exps []ledger.Experiment, a, b, aWhy, bWhy string) tea.Cmd {
		got = []string{a, b, aWhy, bWhy, strconv.Itoa(len(exps))}
		return nil
	}
	p.Act(&p.CompareKey)
	if strings.Join(got, " ") != "e2 e3 marked marked 3" {
		t.Errorf("c: %q", got)
	}
}

// TestRenderFitsItsArea: the panel draws exactly h lines after those it
// is given, the cursor's row marked.
func TestRenderFitsItsArea(t *testing.T) {
	var said string
	p := threeEnded(&said)
	p.Open = true
	st := style.Plain()
	p.SetSize(80, 16)
	lines := p.View([]string{"header"}, &st)
	if len(lines) != 17 || lines[0] != "header" {
		t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	scr := style.StripSGR(strings.Join(lines, "\n"))
	for _, s := range []string{"experiments  3 experiments  delta vs e1", "> e3  try e3", "base"} {
		if !strings.Contains(scr, s) {
			t.Errorf("lacks %q:\n%s", s, scr)
		}
	}
}
