package report

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

const headA6 = "a6d51c0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708"

func portLaunch(port string) *event.LaunchInfo {
	return &event.LaunchInfo{Preset: "sim", Profile: "nccl-ll-ring", Server: "sglang",
		Argv: []string{"flightdeck", "sim", "server", "--tp", "8", "--port", port, "--log-level", "info"}}
}

// knownFP is a fingerprint where everything was captured.
func knownFP(head string, load bool) *event.Fingerprint {
	return &event.Fingerprint{Hostname: "sim-h200", Kernel: "6.8.0", Git: &event.GitState{Repo: "/r", Head: head, Branch: "main", Subject: "x"},
		Versions: []event.Version{{Name: "driver", Value: "590.48.01"}, {Name: "nccl", Value: "2.21.5"}}, GPUs: eventtest.SessionGPUs(load)}
}

// gitFailedFP is a fingerprint whose git capture failed (and its nccl
// probe), taken at an idle start.
func gitFailedFP() *event.Fingerprint {
	fp := knownFP("", false)
	fp.Git = &event.GitState{Repo: "/r"}
	fp.Errors = []string{"git: timed out after 30s"}
	fp.Versions[1] = event.Version{Name: "nccl", Err: "timed out after 10s"}
	return fp
}

// What changed never lists a change where one side is unknown (a failed
// git capture, a failed version probe, a missing fingerprint); it says
// what is unknown for which experiment. GPUs are compared at the end
// (under load), not at the start (idle for one, loaded for the other).
func TestWhatChangedUnknownIsNotAChange(t *testing.T) {
	e1 := ledger.Experiment{ID: "e1", Launch: portLaunch("33551"), Fingerprint: gitFailedFP(), EndGPUs: eventtest.SessionGPUs(true)}
	e2 := ledger.Experiment{ID: "e2", Launch: portLaunch("34012"), Fingerprint: knownFP(headA6, true), EndGPUs: eventtest.SessionGPUs(true)}
	got := fingerprintDiff(&e1, &e2)
	want := []string{"command line `--port 33551` -> `--port 34012`", "commit, nccl unknown for e1"}
	if !slices.Equal(got, want) {
		t.Errorf("e1 -> e2:\n got  %q\n want %q", got, want)
	}
	// The other way round, and a GPU that throttles under load in e3.
	e3 := e1
	e3.ID = "e3"
	e3.EndGPUs = eventtest.SessionGPUs(true)
	e3.EndGPUs[0].ClockEvents.Mask = event.ReasonSWThermalSlowdown
	got = fingerprintDiff(&e2, &e3)
	if len(got) != 3 || got[2] != "commit, nccl unknown for e3" || !strings.HasPrefix(got[1], "GPUs under load (at the end) ") ||
		!strings.Contains(got[1], "sw-thermal") {
		t.Errorf("e2 -> e3: %q", got)
	}
	// A missing fingerprint: said once, nothing compared.
	e4 := ledger.Experiment{ID: "e4", Launch: portLaunch("34012")}
	if got := fingerprintDiff(&e2, &e4); !slices.Equal(got, []string{"no fingerprint captured for e4"}) {
		t.Errorf("e2 -> e4: %q", got)
	}
	// No GPUs at the end on one side: GPUs are left out.
	e5 := e2
	e5.ID, e5.EndGPUs = "e5", nil
	e5.Fingerprint = knownFP(headA6, false)
	if got := fingerprintDiff(&e2, &e5); len(got) != 0 {
		t.Errorf("e2 -> e5 (idle start, no end GPUs): %q, want no difference", got)
	}
}

func TestCommandLineDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"x --port 1 --tp 8", "x --port 2 --tp 8", "`--port 1` -> `--port 2`"},
		{"x --tp 8", "x --tp 8 --enable-foo", "(nothing) -> `--enable-foo`"},
		{"x --a 1 --b 2", "x --a 3 --b 4", "`--a 1 --b 2` -> `--a 3 --b 4`"},
		{"x", "y 1 2 3 4 5 6 7", "`x` -> `y 1 2 3 4 5 ...`"},
	} {
		if got := commandLineDiff(c.a, c.b); got != c.want {
			t.Errorf("%q -> %q: %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// unknownSession: e1 with a failed git capture (62.5), e2 ended by hand
// (80 [79, 81]), a flightdeck checkout, e3 (80.5 [79.5, 81.5]: overlaps
// e2, not e1), e4 open when the cockpit crashed, and a second session
// that starts e5.
func unknownSession() (event.SessionHeader, []event.Event) {
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	res := func(med, lo, hi float64) event.ExperimentResult {
		return event.ExperimentResult{Metric: "tok/s", N: 10, Median: med, Lo: f64(lo), Hi: f64(hi), Samples: []float64{med}}
	}
	fp2 := knownFP(headA6, true)
	fp3 := knownFP(regressHead, false)
	es := []event.Event{
		{At: at(1), Data: event.ExperimentStart{ID: "e1", Name: "base", Trigger: event.TriggerLaunch, Launch: portLaunch("33551")}},
		{At: at(2), Data: event.ExperimentFingerprint{Exp: "e1", Fingerprint: *gitFailedFP()}},
		{At: at(60), Data: event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerRelaunch, Result: res(62.5, 62, 63), GPUs: eventtest.SessionGPUs(true)}},
		{At: at(60), Data: event.ExperimentStart{ID: "e2", Name: "ring", Trigger: event.TriggerLaunch, Launch: portLaunch("34012")}},
		{At: at(61), Data: event.ExperimentFingerprint{Exp: "e2", Fingerprint: *fp2}},
		{At: at(120), Data: event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerKey, Result: res(80, 79, 81), GPUs: eventtest.SessionGPUs(true)}},
		{At: at(125), Data: event.GitAction{Op: "checkout", Args: []string{"9f8e7d6"}, Snapshot: "s1", From: headA6, To: regressHead}},
		{At: at(130), Data: event.ExperimentStart{ID: "e3", Name: "pulled", Trigger: event.TriggerLaunch, Launch: portLaunch("34012")}},
		{At: at(131), Data: event.ExperimentFingerprint{Exp: "e3", Fingerprint: *fp3}},
		{At: at(190), Data: event.ExperimentEnd{Exp: "e3", Trigger: event.TriggerKill, Result: res(80.5, 79.5, 81.5), GPUs: eventtest.SessionGPUs(true)}},
		{At: at(195), Data: event.ExperimentStart{ID: "e4", Name: "open at the crash", Trigger: event.TriggerKey}},
		{At: at(200), Data: event.GPUSample{At: at(200), GPUs: eventtest.SessionGPUs(true)}},
		// The cockpit crashed here with e4 open; another one appends.
		{At: at(3600), Data: event.Session{SessionHeader: event.SessionHeader{Format: journal.FormatName, Version: journal.FormatVersion, Created: at(3600), Flightdeck: "v0.6.0", Host: "demo", User: "ana", Hostname: "laptop", PID: 4243}}},
		{At: at(3601), Data: event.ExperimentStart{ID: "e5", Name: "again", Trigger: event.TriggerKey}},
		{At: at(3660), Data: event.ExperimentEnd{Exp: "e5", Trigger: event.TriggerQuit}},
	}
	return reportHeader(), es
}

func TestReportUnknownsSessionsAndLegend(t *testing.T) {
	h, es := unknownSession()
	r, err := ReadReport(h, scanOf(es), false)
	if err != nil {
		t.Fatal(err)
	}
	e4 := r.Ledger.Find("e4")
	if e4 == nil || e4.EndedBy != "" || !e4.Ended.Equal(reportStart.Add(200*time.Second)) {
		t.Fatalf("e4 %+v: want ended by crash at the crashed session's last event (0:03:20)", e4)
	}
	if len(r.Sessions) != 1 || r.Sessions[0].Crashed != "e4" || r.Sessions[0].Session.PID != 4243 {
		t.Errorf("sessions %+v", r.Sessions)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| e1 | base | unknown | nccl-ll-ring | 62.5 [62.0, 63.0] (n=10) | baseline | baseline | relaunch |",
		"| e2 | ring | a6d51c0 | nccl-ll-ring | 80.0 [79.0, 81.0] (n=10) | +28.0% | no verdict: 1+1 launches; A/A noise unknown — R repeats a launch | by hand |",
		"| e3 | pulled | 9f8e7d6 | nccl-ll-ring | 80.5 [79.5, 81.5] (n=10) | +28.8% | no verdict: 1+1 launches; A/A noise unknown — R repeats a launch | kill |",
		"| e4 | open at the crash | unknown | - | no samples | - | - | crash |",
		"- **e1 -> e2**: +28.0% (62.5 -> 80.0 tok/s), no verdict: 1+1 launches; A/A noise unknown — R repeats a launch; command line `--port 33551` -> `--port 34012`; commit, nccl unknown for e1\n",
		// Overlapping within-launch intervals decide nothing: the
		// across-launch verdict is given instead.
		"- **e2 -> e3**: +0.6% (80.0 -> 80.5 tok/s), no verdict: 1+1 launches; A/A noise unknown — R repeats a launch; commit a6d51c0 -> 9f8e7d6 (\"x\"); flightdeck checkout moved HEAD a6d51c0 -> 9f8e7d6 (files changed not recorded: git diff --stat a6d51c0 9f8e7d6) (undo: snapshot s1) at 0:02:05\n",
		VerdictLegend,
		"## Sessions\n\n1. 0:00:00 flightdeck v0.5.0-test pid 4242 (ana@laptop) session \"regression-hunt\" (created the journal)\n" +
			"2. 1:00:00 flightdeck v0.6.0 pid 4243 (ana@laptop); the previous session ended without ending e4 (crash): ended at its last event, 0:03:20\n",
		"- **Commit:** unknown (git: timed out after 30s); dirty state unknown (repository `/r`)\n",
		"started by a launch, ended by hand (e)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	var doc JSONReport
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Experiments[0].CommitUnknown != "git: timed out after 30s" || doc.Experiments[1].CommitUnknown != "" ||
		len(doc.Sessions) != 1 || doc.Sessions[0].Crashed != "e4" || doc.Sessions[0].Header.PID != 4243 || doc.Sessions[0].T != 3600 {
		t.Errorf("json: experiments %+v, sessions %+v", doc.Experiments[:2], doc.Sessions)
	}
	for _, bad := range []string{"overlap", " ~", "commit - ->", "branch - ->", "detached", "**Commit:** -", "GPUs at start: 2x", "nccl failed"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q in\n%s", bad, out)
		}
	}
}
