package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// appendLines appends raw journal lines to file.
func appendLines(t *testing.T, file string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalDiff: the demo session's e1 (baseline) and e2
// (nccl-ll-ring, same commit) differ in the profile's env only; e2 and e3
// differ in the commit and the dirty patch.
func TestJournalDiff(t *testing.T) {
	dir, file := journalDirWith(t)
	out, errOut, err := runCLI(t, nil, "journal", "diff", "--dir", dir, "2026-11-29-100000", "e1", "e2")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	for _, want := range []string{
		`A: e1 "none @ 1a2b3c4"`,
		"tok/s (server log)  62.5 [62.3, 62.8] n=20  89.0 [88.8, 89.3] n=20  +42.4%  no verdict: 1+1 launches; A/A noise unknown — R repeats a launch",
		"CHANGED (5 of 33 fingerprint rows)",
		"env  NCCL_PROTO          (unset)  ->  LL",
		"COMMITS same commit (1a2b3c4)",
		"28 rows unchanged (--all lists them)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "commit  HEAD") {
		t.Errorf("the commit is listed as changed:\n%s", out)
	}

	out, _, err = runCLI(t, nil, "journal", "diff", file, "e2", "e3", "--all")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`commit  HEAD             1a2b3c4 "Bump flashinfer to 0.5.2"  ->  9f8e7d6 "Fix PCG MoE Error"`,
		"patch   dirty patch      clean",
		"COMMITS not recorded: no experiment started right after a move from 1a2b3c4 to 9f8e7d6 (git log --oneline 1a2b3c4..9f8e7d6",
		"UNCHANGED (30)",
		"env       NCCL_PROTO",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("--all output lacks %q:\n%s", want, out)
		}
	}

	// The baseline mark, recorded later in the session.
	appendLines(t, file, `[190,"exp-baseline",{"exp":"e2"}]`)
	out, _, err = runCLI(t, nil, "journal", "diff", file, "baseline", "e3", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var j report.JSONDiff
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if j.A.ID != "e2" || j.B.ID != "e3" || len(j.Results) != 1 || j.Results[0].DeltaPct == nil || j.Folded != 30 {
		t.Errorf("json %+v", j)
	}
	out, _, err = runCLI(t, nil, "journal", "diff", file, "e1", "e3", "--format", "md")
	if err != nil || !strings.HasPrefix(out, "# e1 vs e3\n") || !strings.Contains(out, "| commit | HEAD |") {
		t.Errorf("md: %v\n%s", err, out)
	}
}

func TestJournalDiffRefuses(t *testing.T) {
	_, file := journalDirWith(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{file, "e1", "e9"}, `experiment "e9": no such experiment (have e1, e2, e3) in `},
		{[]string{file, "baseline", "e2"}, "no baseline marked in "},
		{[]string{file, "e1", "e2", "--format", "xml"}, `--format "xml": want text, md or json`},
		{[]string{file, "e1"}, "names no journal: give JOURNAL:ID (e.g. 2026-12-01-101500-demo:e3), or FILE A B"},
		{[]string{file}, "accepts between 2 and 3 arg(s), received 1"},
		{[]string{file + ":e1", "nosuch:e2"}, `no journal "nosuch" in `},
		{[]string{file + ":e1", file + ":e9"}, `experiment "e9": no such experiment (have e1, e2, e3) in `},
		{[]string{file + ".missing", "e1", "e2"}, "no such file"},
	} {
		out, errOut, err := runCLI(t, nil, append([]string{"journal", "diff"}, tc.args...)...)
		wantRefused(t, errOut, err, tc.msg)
		if out != "" {
			t.Errorf("%q printed %q", tc.args, out)
		}
	}
}

// TestJournalShowMeasures: show and export name the baseline mark, the
// repeat series and the benchmark runs.
func TestJournalShowMeasures(t *testing.T) {
	_, file := journalDirWith(t)
	appendLines(t, file,
		`[190,"exp-baseline",{"exp":"e2"}]`,
		`[190.5,"exp-repeat",{"exp":"e3","series":"e2","i":2,"n":5}]`,
		`[191,"bench-done",{"id":"b1","exp":"e2","result":{"completed":31,"failed":1,"output_tok_s":88.24,"duration":12000000000,`+
			`"config":{"endpoint":"completions","input_len":128,"output_len":128,"concurrency":4,"warmup":1,"seed":1},`+
			`"ttft":{"n":31,"median_ms":40.51},"itl":{"n":3900,"median_ms":11.2},"tpot":{"n":31,"median_ms":11.3},"e2e":{"n":31,"median_ms":1480},`+
			`"errors":[{"err":"HTTP 503: not ready\u001b[31m","count":1}],"requests":[[0,40.5,1480,11.3,11.2,128,128,1]]}}]`,
		`[192,"bench-done",{"id":"b2","exp":"e3","err":"connect: connection refused"}]`,
	)
	out, _, err := runCLI(t, nil, "journal", "show", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseline  e2 (marked: B in the x panel, or journal baseline)",
		"  e2: e2, e3; medians 81.9-89.0 tok/s, spread ±4.2%",
		"  [e2] b1 output 88.2 tok/s, TTFT 40.5 ms, ITL 11.2 ms, TPOT 11.3 ms, E2E 1480 ms (medians), 31 ok, 1 failed, concurrency 4, 128 in / 128 out, 12s; errors: HTTP 503: not ready",
		"  [e3] b2 failed: connect: connection refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", out)
	}
	// The deltas are relative to the marked baseline now.
	if !strings.Contains(out, "-8.0%") || !strings.Contains(out, "baseline") {
		t.Errorf("deltas not against e2:\n%s", out)
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "e3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  repeat      launch 2 of 5 of the repeat of e2\n", "  bench       b2 failed: connect: connection refused\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("show e3 lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "e2")
	if err != nil || !strings.Contains(out, "  baseline    marked: deltas") {
		t.Errorf("show e2: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var doc report.JSONReport
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	e2, e3 := doc.Experiments[1], doc.Experiments[2]
	if doc.Baseline != "e2" || !doc.BaselineMarked || len(e2.Bench) != 1 || e2.Bench[0].TTFTMedianMs == nil || *e2.Bench[0].TTFTMedianMs != 40.51 ||
		len(e3.Bench) != 1 || e3.Bench[0].Err == "" || e3.Repeat == nil || e3.Repeat.I != 2 {
		t.Errorf("json: baseline %q marked %v, e2 bench %+v, e3 %+v %+v", doc.Baseline, doc.BaselineMarked, e2.Bench, e3.Bench, e3.Repeat)
	}
	out, _, err = runCLI(t, nil, "journal", "export", file, "--format", "md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- **Baseline:** marked\n", "- **Repeat:** launch 2 of 5 of the repeat of e2\n", "- **Benchmark:** b1 output 88.2 tok/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("export md lacks %q", want)
		}
	}
}

// TestJournalDiffBaselineAndSame: "baseline" is the marked baseline even
// when an experiment is named "baseline" (a note says so), else the one
// named so; the same experiment on both sides is refused.
func TestJournalDiffBaselineAndSame(t *testing.T) {
	_, file := journalDirWith(t)
	appendLines(t, file, `[190,"exp-update",{"exp":"e1","name":"baseline"}]`)
	out, errOut, err := runCLI(t, nil, "journal", "diff", file, "baseline", "e3")
	if err != nil || !strings.HasPrefix(out, "A: e1 \"baseline\"\n") || errOut != "" {
		t.Errorf("named baseline: %v\n%s\nstderr %q", err, out, errOut)
	}
	appendLines(t, file, `[191,"exp-baseline",{"exp":"e2"}]`)
	out, errOut, err = runCLI(t, nil, "journal", "diff", file, "baseline", "e3")
	if err != nil || !strings.HasPrefix(out, "A: e2 ") {
		t.Errorf("marked baseline: %v\n%s", err, out)
	}
	if want := `"baseline" is the marked baseline e2; e1 is named "baseline" too: give its id to compare it`; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q lacks %q", errOut, want)
	}
	for _, args := range [][]string{{"e1", "e1"}, {"baseline", "e2"}, {"e3", "nccl-ll-ring @ 9f8e7d6"}} {
		out, errOut, err := runCLI(t, nil, append([]string{"journal", "diff", file}, args...)...)
		wantRefused(t, errOut, err, "A and B are the same experiment (")
		if out != "" {
			t.Errorf("%q printed %q", args, out)
		}
	}
}

// TestJournalDiffLiveAndDamaged: in a journal being written, the open
// experiment compares with its result so far; what a damaged journal's
// reader skipped is said on stderr.
func TestJournalDiffLiveAndDamaged(t *testing.T) {
	_, file := journalDirWith(t)
	appendLines(t, file, `[12,"note",{"text":"garb`)
	w, err := journal.Append(file, event.SessionHeader{Host: "demo", PID: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w.Write(event.Event{At: at, Data: event.ExperimentStart{ID: "e4", Name: "by hand", Trigger: event.TriggerKey}})
	for i := range 30 {
		w.Write(event.Event{At: at.Add(time.Duration(2*i+1) * time.Second), Data: event.TokRate{TokPerSec: 70 + float64(i%3)/10, Ranks: 1}})
	}
	if err := w.Flush(true); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, nil, "journal", "diff", file, "e3", "e4")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	for _, want := range []string{`B: e4 "by hand" (open: result so far)`, "tok/s (server log)  81.9 [81.7, 82.2] n=20  70.1 ["} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "flightdeck: "+file+": skipped ") || !strings.Contains(errOut, "garbled") {
		t.Errorf("stderr %q: want what was skipped", errOut)
	}
}
