package ledger

import (
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// TestLedgerBaseline: the latest exp-baseline wins, "" clears it, and a
// mark naming an experiment the ledger never saw reads as none.
func TestLedgerBaseline(t *testing.T) {
	start := func(s float64, id string) eventAt {
		return eventAt{s, event.ExperimentStart{ID: id, Name: id, Trigger: event.TriggerKey}}
	}
	for _, tc := range []struct {
		name    string
		events  []eventAt
		want    string // "" for nil
		changed []bool // Apply's answer per event
	}{
		{"none", []eventAt{start(0, "e1")}, "", []bool{true}},
		{"marked", []eventAt{start(0, "e1"), {1, event.Baseline{Exp: "e1"}}}, "e1", []bool{true, true}},
		{"latest wins", []eventAt{start(0, "e1"), start(1, "e2"), {2, event.Baseline{Exp: "e1"}}, {3, event.Baseline{Exp: "e2"}}}, "e2", []bool{true, true, true, true}},
		{"same mark twice", []eventAt{start(0, "e1"), {1, event.Baseline{Exp: "e1"}}, {2, event.Baseline{Exp: "e1"}}}, "e1", []bool{true, true, false}},
		{"cleared", []eventAt{start(0, "e1"), {1, event.Baseline{Exp: "e1"}}, {2, event.Baseline{}}}, "", []bool{true, true, true}},
		{"unknown id", []eventAt{start(0, "e1"), {1, event.Baseline{Exp: "e1"}}, {2, event.Baseline{Exp: "e9"}}}, "", []bool{true, true, true}},
		{"marked before its start", []eventAt{{0, event.Baseline{Exp: "e1"}}, start(1, "e1")}, "e1", []bool{true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Ledger
			for i, e := range tc.events {
				if got := l.Apply(ev(e.s, e.p)); got != tc.changed[i] {
					t.Errorf("Apply(%T) = %v, want %v", e.p, got, tc.changed[i])
				}
			}
			got := ""
			if x := l.Baseline(); x != nil {
				got = x.ID
			}
			if got != tc.want {
				t.Errorf("Baseline() = %q, want %q", got, tc.want)
			}
		})
	}
}

type eventAt struct {
	s float64
	p event.Payload
}

// TestLedgerRepeatAndBench: exp-repeat tags its experiment; bench-done
// runs land on the experiment they name, in order, failed ones too,
// whether it is open or not; unknown ids change nothing.
func TestLedgerRepeatAndBench(t *testing.T) {
	res := func(tok float64) *event.BenchResult { return &event.BenchResult{Completed: 4, OutputTokPerSec: tok} }
	l := fold(seq(
		ev(0, event.ExperimentStart{ID: "e1", Trigger: event.TriggerLaunch}),
		ev(1, event.BenchStarted{ID: "b1", Exp: "e1"}),
		ev(2, event.BenchDone{ID: "b1", Exp: "e1", Result: res(62.4)}),
		ev(3, event.ExperimentStart{ID: "e2", Trigger: event.TriggerLaunch}),
		ev(3.1, event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 5}),
		ev(4, event.BenchDone{ID: "b2", Exp: "e2", Err: "HTTP 503"}),
		ev(5, event.BenchDone{ID: "b3", Exp: "e2", Result: res(61.9)}),
		ev(6, event.BenchDone{ID: "b4", Exp: "e1", Result: res(62.0)}), // e1 is closed: still its run
	))
	exps := l.Experiments()
	if len(exps) != 2 {
		t.Fatalf("%d experiments", len(exps))
	}
	ids := func(ds []event.BenchDone) (out []string) {
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	if got := ids(exps[0].Bench); len(got) != 2 || got[0] != "b1" || got[1] != "b4" {
		t.Errorf("e1 bench runs %v, want [b1 b4]", got)
	}
	if got := ids(exps[1].Bench); len(got) != 2 || got[0] != "b2" || got[1] != "b3" || exps[1].Bench[0].Err != "HTTP 503" {
		t.Errorf("e2 bench runs %v, want [b2 b3] with b2 failed", got)
	}
	if exps[0].Repeat != nil {
		t.Errorf("e1 tagged %+v", exps[0].Repeat)
	}
	if r := exps[1].Repeat; r == nil || *r != (event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 5}) {
		t.Errorf("e2 repeat %+v", r)
	}
	for _, p := range []event.Payload{event.BenchDone{ID: "b5", Exp: "e9"}, event.BenchDone{ID: "b6"}, event.Repeat{Exp: "e9", Series: "e1", I: 3, N: 5}} {
		if l.Apply(ev(7, p)) {
			t.Errorf("Apply(%+v) changed the ledger", p)
		}
	}
}
