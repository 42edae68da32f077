package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// historyDir is a journals directory holding a host's two sessions,
// written with the journal package: last week's at a6d51c0 (two launches
// of nccl-ll-ring at about 89.4 tok/s) and today's at 3207427 (two at
// about 82.2), and a journal of another host.
func historyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)
	for _, j := range []struct {
		name, host string
		at         time.Time
		head       string
		toks       []float64
	}{
		{"gpu-box/2026-11-24-101500-demo.jsonl", "gpu-box", t0, ledgertest.HeadA, []float64{89.4, 89.6}},
		{"gpu-box/2026-12-01-093000-demo.jsonl", "gpu-box", t0.Add(7*24*time.Hour - 45*time.Minute), ledgertest.HeadB, []float64{82.1, 82.3}},
		{"other/2026-11-30-120000-demo.jsonl", "other-box", t0.Add(6 * 24 * time.Hour), ledgertest.HeadA, []float64{61}},
	} {
		path := filepath.Join(dir, j.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		var xs []ledger.Experiment
		for i, tok := range j.toks {
			xs = append(xs, ledgertest.Experiment("e"+string(rune('1'+i)), "nccl-ll-ring", j.head, tok))
		}
		if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: j.host, Label: "demo", Created: j.at}, xs...); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, j.at, j.at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestJournalDiffAcrossJournals: last week's e1 against today's e2, named
// by journal prefixes: both journals' launches pooled (2+2), the
// experiments by qualified ids; the three-argument form with one side
// qualified says the same.
func TestJournalDiffAcrossJournals(t *testing.T) {
	t.Setenv("TZ", "UTC")
	dir := historyDir(t)
	out, errOut, err := runCLI(t, nil, "journal", "diff", "--dir", dir, "2026-11-24:e1", "2026-12-01-093000-demo:e2")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	golden.RequireEqual(t, []byte(out))
	for _, want := range []string{"2026-11-24-101500-demo:e1", "2026-12-01-093000-demo:e2", "n=2+2", "slower"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out3, errOut, err := runCLI(t, nil, "journal", "diff", "--dir", dir, "2026-12-01-093000-demo", "2026-11-24-101500-demo:e1", "e2")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if out3 != out {
		t.Errorf("FILE A:qualified B differs from the two-argument form:\n%s\nvs\n%s", out3, out)
	}
	// By path too.
	if _, errOut, err := runCLI(t, nil, "journal", "diff", filepath.Join(dir, "gpu-box", "2026-11-24-101500-demo.jsonl")+":e2", "--dir", dir, "2026-12-01:e1"); err != nil {
		t.Errorf("by path: %v: %s", err, errOut)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"2026:e1", "2026-12-01:e2"}, `"2026" names 3 journals: `},
		{[]string{"2026-11-24:e7", "2026-12-01:e2"}, `no experiment "e7" in `},
		{[]string{"2026-11-24:e1", "2027:e2"}, `no journal "2027" in ` + dir},
	} {
		out, errOut, err := runCLI(t, nil, append([]string{"journal", "diff", "--dir", dir}, tc.args...)...)
		wantRefused(t, errOut, err, tc.msg)
		if out != "" {
			t.Errorf("%q printed %q", tc.args, out)
		}
	}
}

// TestJournalLsHost: --host lists that host's journals only.
func TestJournalLsHost(t *testing.T) {
	t.Setenv("TZ", "UTC")
	dir := historyDir(t)
	out, errOut, err := runCLI(t, nil, "journal", "ls", "--dir", dir, "--host", "gpu-box")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.HasPrefix(out, "journals of host gpu-box in "+dir+", newest first:") ||
		!strings.Contains(out, "2026-12-01-093000-demo") || !strings.Contains(out, "2026-11-24-101500-demo") ||
		strings.Contains(out, "other") || strings.Index(out, "2026-12-01") > strings.Index(out, "2026-11-24") {
		t.Errorf("ls --host gpu-box:\n%s", out)
	}
	out, _, err = runCLI(t, nil, "journal", "ls", "--dir", dir, "--host", "nobody")
	if err != nil || out != "no journals of host nobody in "+dir+"\n" {
		t.Errorf("ls --host nobody: %v %q", err, out)
	}
}

// TestJournalShowEarlierBaseline: a baseline mark naming an earlier
// journal's experiment is resolved there (its result, the deltas and the
// across-launch verdicts against it, over both journals' launches), or
// said to be not at hand.
func TestJournalShowEarlierBaseline(t *testing.T) {
	dir := historyDir(t)
	today := filepath.Join(dir, "gpu-box", "2026-12-01-093000-demo.jsonl")
	appendLines(t, today, `[600,"exp-baseline",{"exp":"2026-11-24-101500-demo:e1"}]`)
	out, errOut, err := runCLI(t, nil, "journal", "show", "--dir", dir, today)
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	for _, want := range []string{
		"baseline  2026-11-24-101500-demo:e1 from journal 2026-11-24-101500-demo: nccl-ll-ring @ a6d51c0, tok/s 89.4 [89.0, 89.7] (n=7)",
		"-8.2%",
		// The verdict pools the earlier journal's launches (2 at a6d51c0)
		// and its A/A noise, as the cockpit's x panel does.
		"slower -8.2% vs A/A noise sd 0.2% (p<0.001 n=2+2, noise from 4 launches",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	// The report says the same.
	md, errOut, err := runCLI(t, nil, "journal", "export", "--dir", dir, "--format", "md", today)
	if err != nil || !strings.Contains(md, `**Verdict vs 2026-11-24-101500-demo:e1:** slower -8.2% vs A/A noise sd 0.2% (p\<0.001 n=2+2`) {
		t.Errorf("export md: %v %s\n%s", err, errOut, md)
	}
	if err := os.Remove(filepath.Join(dir, "gpu-box", "2026-11-24-101500-demo.jsonl")); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, nil, "journal", "show", "--dir", dir, today)
	if err != nil || !strings.Contains(out, `baseline  2026-11-24-101500-demo:e1 from journal 2026-11-24-101500-demo, not at hand: no journal "2026-11-24-101500-demo" in `) {
		t.Errorf("show without the earlier journal: %v\n%s", err, out)
	}
}

// TestGitCheckoutPreviewShowsMeasuredRates: the preview's commit lists
// give each commit the tok/s the host's journals measured at it.
func TestGitCheckoutPreviewShowsMeasuredRates(t *testing.T) {
	tr := newGitRepoFixture(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	path := filepath.Join(state, "flightdeck", "journals", "local", "2026-11-24-101500-demo.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	x := ledgertest.Experiment("e1", "nccl-ll-ring", tr.c2, 89.4)
	if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: "local", Created: time.Now().Add(-time.Hour)}, x); err != nil {
		t.Fatal(err)
	}
	noTerminal(t)
	out, _, _ := runCLI(t, nil, "git", "checkout", "local", tr.c2[:10], "--repo", tr.dir)
	if want := "brings in 1 commit\n  + " + tr.c2[:7] + " 89.4 tok/s n=1  Fix PCG MoE Error\n"; !strings.Contains(out, want) {
		t.Errorf("preview lacks %q:\n%s", want, out)
	}
}

// TestJournalBaselineFromAnEarlierJournal: journal baseline takes
// JOURNAL:ID, journals the qualified id, and refuses one naming nothing.
func TestJournalBaselineFromAnEarlierJournal(t *testing.T) {
	dir := historyDir(t)
	out, errOut, err := runCLI(t, nil, "journal", "baseline", "--dir", dir, "2026-12-01", "2026-11-24:e2")
	if err != nil || !strings.Contains(out, `baseline: 2026-11-24-101500-demo:e2 "nccl-ll-ring @ a6d51c0" in `) {
		t.Fatalf("%v: %s%s", err, out, errOut)
	}
	out, _, err = runCLI(t, nil, "journal", "show", "--dir", dir, "2026-12-01")
	if err != nil || !strings.Contains(out, "baseline  2026-11-24-101500-demo:e2 from journal 2026-11-24-101500-demo: ") {
		t.Errorf("show: %v\n%s", err, out)
	}
	// "baseline" in diff is that earlier experiment.
	out, errOut, err = runCLI(t, nil, "journal", "diff", "--dir", dir, "2026-12-01", "baseline", "e1")
	if err != nil || !strings.HasPrefix(out, "A: 2026-11-24-101500-demo:e2 ") || !strings.Contains(out, "B: 2026-12-01-093000-demo:e1 ") {
		t.Errorf("diff baseline e1: %v %s\n%s", err, errOut, out)
	}
	_, errOut, err = runCLI(t, nil, "journal", "baseline", "--dir", dir, "2026-12-01", "2026-11-24:e9")
	wantRefused(t, errOut, err, `no experiment "e9" in `)
	out, _, err = runCLI(t, nil, "journal", "baseline", "--dir", dir, "2026-12-01", "--clear")
	if err != nil || !strings.Contains(out, "baseline 2026-11-24-101500-demo:e2 cleared in ") {
		t.Errorf("clear: %v %s", err, out)
	}
}

// TestJournalDiffPoolsTheHostsEarlierJournals: a bisect step of one
// launch a side in today's journal gets its verdict from the A/A noise a
// repeat measured in last week's journal of the host (its three launches
// of A's configuration join A's), as journal show and the x panel give
// it; a journal of another host lends nothing.
func TestJournalDiffPoolsTheHostsEarlierJournals(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 24, 10, 15, 0, 0, time.UTC)
	write := func(name, host string, at time.Time, xs ...ledger.Experiment) string {
		path := filepath.Join(dir, host, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := ledgertest.WriteJournal(path, event.SessionHeader{Host: host, Label: "demo", Created: at}, xs...); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var repeat []ledger.Experiment
	for i, tok := range []float64{89.4, 89.6, 89.2} {
		repeat = append(repeat, ledgertest.Experiment("e"+string(rune('1'+i)), "nccl-ll-ring", ledgertest.HeadA, tok))
	}
	today := write("2026-12-01-093000-demo.jsonl", "gpu-box", t0.Add(7*24*time.Hour),
		ledgertest.Experiment("e1", "nccl-ll-ring", ledgertest.HeadA, 89.4), ledgertest.Experiment("e2", "nccl-ll-ring", ledgertest.HeadB, 82.1))
	out, errOut, err := runCLI(t, nil, "journal", "diff", "--dir", dir, today, "e1", "e2")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.Contains(out, "no verdict: 1+1 launches; A/A noise unknown") {
		t.Errorf("without the repeat: %s", out)
	}
	write("2026-11-24-101500-demo.jsonl", "other-box", t0, repeat...)
	if out, _, _ := runCLI(t, nil, "journal", "diff", "--dir", dir, today, "e1", "e2"); !strings.Contains(out, "A/A noise unknown") {
		t.Errorf("another host's repeat lent its noise: %s", out)
	}
	write("2026-11-24-101500-demo.jsonl", "gpu-box", t0, repeat...)
	out, errOut, err = runCLI(t, nil, "journal", "diff", "--dir", dir, today, "e1", "e2")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	if !strings.Contains(out, "slower -8.2% vs A/A noise sd ") || !strings.Contains(out, "n=4+1, noise from 4 launches") {
		t.Errorf("the earlier journal's repeat is not pooled:\n%s", out)
	}
}
