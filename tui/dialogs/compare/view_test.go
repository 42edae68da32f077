package compare

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/tui/component"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// ranger answers Range with r, recording the contexts it ran under.
type ranger struct {
	r    *event.CommitRange
	ctxs []context.Context
}

func (f *ranger) Range(ctx context.Context, _, _ string) (*event.CommitRange, error) {
	f.ctxs = append(f.ctxs, ctx)
	return f.r, nil
}

// twoHeads are two experiments at different commits, the older first.
func twoHeads() []ledger.Experiment {
	at := func(head string) *event.Fingerprint {
		return &event.Fingerprint{Git: &event.GitState{Head: head + strings.Repeat("0", 33)}}
	}
	return []ledger.Experiment{{ID: "e1", Name: "a", Fingerprint: at("bba2fc4")}, {ID: "e2", Name: "b", Fingerprint: at("a6d51c0")}}
}

// TestRangeGoesToTheViewThatAsked: a view reads the range the journal
// did not record; the answer fills it in, a stale one is dropped, and
// closing a view ends the read's context.
func TestRangeGoesToTheViewThatAsked(t *testing.T) {
	var said string
	var s component.Stack
	rg := &ranger{r: &event.CommitRange{Ahead: []string{"a6d51c0 NCCL LL ring"}, AheadTotal: 1}}
	vs := &Views{Ctl: rg, Push: s.Push, Flash: func(text string, _ style.Token) { said = text }}
	cmd := vs.Open(twoHeads(), "e1", "e2", "baseline", "selected")
	v, ok := s.Top().(*View)
	if !ok || cmd == nil || !v.Reading() || said != "comparing e1 (baseline) vs e2 (selected)" {
		t.Fatalf("open: top %q cmd %v %q", s.TopID(), cmd != nil, said)
	}
	msg := cmd().(RangeMsg)
	v.Ranged(RangeMsg{Seq: msg.Seq - 1, Err: errors.New("stale")})
	if v.RangeErr() != "" || !v.Reading() {
		t.Error("a stale answer was applied")
	}
	v.Ranged(msg)
	if v.Reading() || v.Holding() || v.Diff().Range == nil || v.Diff().RangeNote != "read from git on the host now" {
		t.Errorf("answer: reading %v holding %v range %v", v.Reading(), v.Holding(), v.Diff().Range)
	}
	// A second view reads afresh; closing it ends its read.
	s.Key(tea.KeyPressMsg{Code: tea.KeyEscape})
	cmd = vs.Open(twoHeads(), "e1", "e2", "baseline", "selected")
	v2 := vs.Last()
	if v2 == v || v2.Seq() != v.Seq()+1 || !v2.Holding() {
		t.Fatalf("second view: seq %d holding %v", v2.Seq(), v2.Holding())
	}
	s.Key(tea.KeyPressMsg{Code: 'q', Text: "q"})
	if !s.Empty() || v2.Holding() || v2.Reading() {
		t.Errorf("q: open %v holding %v", !s.Empty(), v2.Holding())
	}
	cmd()
	if err := rg.ctxs[len(rg.ctxs)-1].Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the closed view's read ran under a live context: %v", err)
	}
}

// TestViewFillsTheBodyArea: the box takes the rows between the header
// and the footer, and none on a screen too small for it.
func TestViewFillsTheBodyArea(t *testing.T) {
	var s component.Stack
	vs := &Views{Push: s.Push, Flash: func(string, style.Token) {}}
	vs.Open(twoHeads(), "e1", "e2", "baseline", "selected")
	st := style.Plain()
	lines, x, y := component.Place(&st, s.Top().View(&st, 80, 24), 80, 24)
	if len(lines) != 22 || x != 0 || y != 1 || !strings.HasPrefix(style.StripSGR(lines[0]), "+- compare e1 vs e2") {
		t.Errorf("%d lines at %d,%d: %q", len(lines), x, y, lines[0])
	}
	if b := s.Top().View(&st, 11, 24); b.Width != 0 {
		t.Errorf("11 columns: a box %d wide", b.Width)
	}
}
