package ledger

import (
	"slices"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var lt0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return lt0.Add(time.Duration(s * float64(time.Second))) }

func ev(s float64, p event.Payload) event.Event { return event.Event{At: sec(s), Data: p} }

// rates returns tok-rate events every step seconds from start.
func rates(start, step float64, values ...float64) []event.Event {
	var es []event.Event
	for i, v := range values {
		es = append(es, ev(start+step*float64(i), event.TokRate{TokPerSec: v, Ranks: 1}))
	}
	return es
}

func seq(parts ...any) []event.Event {
	var es []event.Event
	for _, p := range parts {
		switch p := p.(type) {
		case event.Event:
			es = append(es, p)
		case []event.Event:
			es = append(es, p...)
		}
	}
	return es
}

func fold(es []event.Event) *Ledger {
	var l Ledger
	for _, e := range es {
		l.Apply(e)
	}
	return &l
}

func TestLedgerProvisional(t *testing.T) {
	launch := event.ServerLaunched{Record: event.LaunchRecord{PID: 10, Launch: event.LaunchInfo{Preset: "sim", Profile: "nccl-ll-ring"}}}
	for _, tc := range []struct {
		name    string
		events  []event.Event
		samples []float64
		dropped int
		accept  float64
	}{
		{"nothing open", seq(rates(0, 5, 88, 89, 90)), nil, 0, 0},
		{"launch, ready line, warm-up dropped",
			seq(ev(0, launch), ev(0, event.ExperimentStart{ID: "e1", Trigger: event.TriggerLaunch}), ev(60, event.ServerReady{Server: "sglang"}),
				rates(62, 2, 20, 50, 70, 80, 88, 89, 90, 91)),
			[]float64{88, 89, 90, 91}, 4, 0},
		{"ready from the health check's Since",
			seq(ev(0, event.ExperimentStart{ID: "e1"}), ev(75, event.ServerStatus{Phase: event.PhaseReady, Since: sec(70)}),
				rates(72, 5, 40, 60, 85, 86, 87)),
			[]float64{86, 87}, 3, 0},
		{"started by hand long after ready: warm-up counts from the start",
			seq(ev(0, event.ServerReady{}), rates(10, 5, 80, 80, 80), ev(100, event.ExperimentStart{ID: "e1", Trigger: event.TriggerKey}),
				rates(101, 5, 81, 82, 83, 84, 85)),
			[]float64{84, 85}, 3, 0},
		{"samples while flightdeck's benchmark runs (and the one spanning its end) are another workload",
			seq(ev(0, launch), ev(0, event.ExperimentStart{ID: "e1", Trigger: event.TriggerLaunch}), ev(60, event.ServerReady{Server: "sglang"}),
				rates(62, 2, 20, 50, 70, 88, 89, 90), ev(74, event.BenchStarted{ID: "b1", Exp: "e1"}),
				rates(75, 2, 300, 310, 305), ev(81, event.BenchDone{ID: "b1", Exp: "e1"}), rates(82, 2, 150, 89, 90)),
			[]float64{89, 90, 89, 90}, 8, 0}, // 4 of warm-up, 3 while b1 ran, 150 spanning its end
		{"dropped rates are not samples",
			seq(ev(0, event.ExperimentStart{ID: "e1"}), rates(1, 5, 80, 80, 80, 80),
				ev(30, event.TokRate{TokPerSec: 0.3, Dropped: true}), rates(31, 5, 90)),
			[]float64{80, 90}, 3, 0},
		{"a rewritten log starts a run with its own warm-up",
			seq(ev(0, event.ExperimentStart{ID: "e1"}), rates(1, 5, 70, 70, 70, 88, 88),
				ev(30, event.LogReset{Reason: "truncated"}), rates(31, 5, 50, 50, 50, 89)),
			[]float64{88, 88, 89}, 6, 0},
		{"EAGLE accept length: median over kept samples",
			seq(ev(0, event.ExperimentStart{ID: "e1"}),
				ev(1, event.TokRate{TokPerSec: 10, AcceptLength: 9, HasAccept: true}),
				ev(6, event.TokRate{TokPerSec: 10, AcceptLength: 9, HasAccept: true}),
				ev(11, event.TokRate{TokPerSec: 10, AcceptLength: 9, HasAccept: true}),
				ev(16, event.TokRate{TokPerSec: 94, AcceptLength: 2.9, HasAccept: true}),
				ev(21, event.TokRate{TokPerSec: 95, AcceptLength: 3.1, HasAccept: true}),
				ev(26, event.TokRate{TokPerSec: 93})),
			[]float64{94, 95, 93}, 3, 3.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := fold(tc.events)
			r := l.Provisional()
			if !slices.Equal(r.Samples, tc.samples) || r.Dropped != tc.dropped || r.AcceptLength != tc.accept {
				t.Errorf("samples %v dropped %d accept %v; want %v, %d, %v", r.Samples, r.Dropped, r.AcceptLength, tc.samples, tc.dropped, tc.accept)
			}
			if tc.samples != nil && (r.Metric != "tok/s" || r.N != len(tc.samples)) {
				t.Errorf("metric %q n %d", r.Metric, r.N)
			}
		})
	}
}

func TestLedgerResultNumbers(t *testing.T) {
	// Eight steady samples after the warm-up: the same numbers benchstat
	// gives (Summarize's tests hold the benchstat output): 89.2 ± 1 %.
	l := fold(seq(ev(0, event.ExperimentStart{ID: "e1"}), ev(0, event.ServerReady{}), rates(2, 2, 1, 1, 1, 1, 1),
		rates(12, 2, 89.1, 88.4, 90.2, 87.9, 89.6, 91.0, 88.8, 89.3)))
	r := l.Provisional()
	if r.N != 8 || r.Dropped != 5 || r.Median < 89.2-1e-9 || r.Median > 89.2+1e-9 || r.Lo == nil || r.Hi == nil || r.Confidence < 0.95 || len(r.Warnings) != 0 {
		t.Fatalf("result %+v", r)
	}
	few := fold(seq(ev(0, event.ExperimentStart{ID: "e1"}), rates(20, 5, 5, 5, 5, 80, 81))).Provisional()
	if few.N != 2 || few.Lo != nil || few.Hi != nil || !slices.Contains(few.Warnings, "need >= 6 samples for confidence interval at level 0.95") {
		t.Errorf("two samples: %+v", few)
	}
}

func TestLedgerExperiments(t *testing.T) {
	fp := event.Fingerprint{Hostname: "gpu-box", Kernel: "6.8.0"}
	res := event.ExperimentResult{Metric: "tok/s", N: 6, Median: 89}
	gpus := []event.GPU{{Index: 0}}
	l := fold(seq(
		ev(0, event.Note{Text: "before anything"}),
		ev(1, event.ExperimentStart{ID: "e1", Name: "none @ a6d51c0", Hypothesis: "baseline", Trigger: event.TriggerLaunch, Launch: &event.LaunchInfo{Preset: "sim"}}),
		ev(2, event.Note{Text: "warming up", Exp: "e1"}),
		ev(3, event.ExperimentFingerprint{Exp: "e1", Fingerprint: fp}),
		ev(4, event.ExperimentUpdate{Exp: "e1", Name: "baseline run"}),
		ev(5, event.ExperimentUpdate{Exp: "nope", Name: "ignored"}),
		ev(60, event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerRelaunch, Conclusion: "62 tok/s", Result: res, GPUs: gpus}),
		ev(61, event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKill}), // a second end changes nothing
		ev(62, event.ExperimentStart{ID: "e2", Name: "nccl-ll-ring @ a6d51c0", Trigger: event.TriggerLaunch}),
		ev(63, event.ExperimentStart{ID: "e2", Name: "duplicate"}),
		ev(70, event.Note{Text: "faster", Exp: "e2"}),
		rates(71, 5, 80, 80, 80, 89, 89, 90),
		// No exp-end for e2: the cockpit died. A new start closes it.
		ev(200, event.ExperimentStart{ID: "e3", Name: "by hand", Trigger: event.TriggerKey}),
	))
	xs := l.Experiments()
	if len(xs) != 3 {
		t.Fatalf("%d experiments", len(xs))
	}
	e1 := xs[0]
	if e1.Name != "baseline run" || e1.Hypothesis != "baseline" || e1.Conclusion != "62 tok/s" || e1.StartedBy != event.TriggerLaunch ||
		e1.EndedBy != event.TriggerRelaunch || !e1.Ended.Equal(sec(60)) || !e1.Started.Equal(sec(1)) || e1.Result.Median != 89 ||
		len(e1.EndGPUs) != 1 || e1.Fingerprint == nil || e1.Fingerprint.Hostname != "gpu-box" || e1.Launch == nil || e1.Open() {
		t.Errorf("e1 = %+v", e1)
	}
	if len(e1.Notes) != 1 || e1.Notes[0].Text != "warming up" || !e1.Notes[0].At.Equal(sec(2)) {
		t.Errorf("e1 notes %+v", e1.Notes)
	}
	e2 := xs[1]
	if e2.Name != "nccl-ll-ring @ a6d51c0" || e2.Open() || e2.EndedBy != "" || !e2.Ended.Equal(sec(200)) ||
		!slices.Equal(e2.Result.Samples, []float64{89, 89, 90}) || len(e2.Notes) != 1 {
		t.Errorf("e2 = %+v", e2)
	}
	if c := l.Current(); c == nil || c.ID != "e3" || c.StartedBy != event.TriggerKey {
		t.Errorf("current %+v", c)
	}
	if len(l.Notes()) != 3 || l.Notes()[0].Text != "before anything" || l.Notes()[0].Exp != "" {
		t.Errorf("notes %+v", l.Notes())
	}
	if l.Find("e2") != &l.Experiments()[1] || l.Find("baseline run") != &l.Experiments()[0] || l.Find("x") != nil {
		t.Error("Find")
	}
}

func TestLedgerClose(t *testing.T) {
	var empty Ledger
	if empty.Close(time.Time{}) {
		t.Error("closed an empty ledger")
	}
	l := fold(seq(ev(0, event.ExperimentStart{ID: "e1"}), rates(1, 5, 80, 80, 80, 88, 89, 90), ev(40, event.GPUSample{})))
	if !l.Apply(ev(41, event.TokRate{TokPerSec: 91})) {
		t.Error("a sample of the open experiment is a change")
	}
	if !l.Close(time.Time{}) {
		t.Fatal("nothing to close")
	}
	x := l.Experiments()[0]
	if x.Open() || x.EndedBy != "" || !x.Ended.Equal(sec(41)) || !slices.Equal(x.Result.Samples, []float64{88, 89, 90, 91}) {
		t.Errorf("closed: %+v", x)
	}
	if l.Current() != nil || l.Close(sec(50)) {
		t.Error("still open")
	}
	if r := l.Provisional(); r.N != 0 || r.Metric != "" {
		t.Errorf("provisional with none open: %+v", r)
	}
	if l.Apply(ev(60, event.TokRate{TokPerSec: 91})) {
		t.Error("a sample with none open changed the ledger")
	}
}

// A session appended after a crash ends the experiment the crashed one
// left open at the crashed session's last event, with no trigger, and its
// result is that of the samples before the crash; the new session's
// experiments start afresh.
func TestLedgerSessionEndsCrashedExperiment(t *testing.T) {
	l := fold(seq(ev(0, event.ExperimentStart{ID: "e1"}), rates(1, 5, 80, 80, 80, 88, 89, 90), ev(40, event.GPUSample{})))
	if !l.Apply(ev(3600, event.Session{SessionHeader: event.SessionHeader{PID: 2}})) {
		t.Error("a session closing an open experiment is a change")
	}
	x := l.Experiments()[0]
	if x.Open() || x.EndedBy != "" || !x.Ended.Equal(sec(40)) || !slices.Equal(x.Result.Samples, []float64{88, 89, 90}) {
		t.Errorf("e1 after the new session: ended %v by %q, samples %v; want ended at 40 s by crash, [88 89 90]", x.Ended, x.EndedBy, x.Result.Samples)
	}
	l.Apply(ev(3601, event.ExperimentStart{ID: "e2"}))
	if c := l.Current(); c == nil || c.ID != "e2" || !c.Started.Equal(sec(3601)) {
		t.Errorf("current after the new start: %+v", c)
	}
	if !l.Apply(ev(3700, event.Session{})) || l.Current() != nil || !l.Experiments()[1].Ended.Equal(sec(3601)) {
		t.Errorf("a third session: e2 %+v, want ended at its start (no event after it)", l.Experiments()[1])
	}
	if l.Apply(ev(3800, event.Session{})) {
		t.Error("a session with nothing open changed the ledger")
	}
}

// BenchmarkLedgerApply24h folds a 24 h session's tok-rate samples (one a
// second) into an open experiment: Apply must stay O(1) amortised.
func BenchmarkLedgerApply24h(b *testing.B) {
	es := seq(ev(0, event.ExperimentStart{ID: "e1"}), ev(0, event.ServerReady{}), rates(1, 1, make([]float64, 86400)...))
	b.ReportAllocs()
	for b.Loop() {
		var l Ledger
		for _, e := range es {
			l.Apply(e)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/event")
}
