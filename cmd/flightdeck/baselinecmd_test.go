package main

import (
	"os"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// baselineOf reads the journal at file and returns its marked baseline's
// id ("" when none) and how many sessions were appended to it.
func baselineOf(t *testing.T, file string) (string, int) {
	t.Helper()
	j, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := report.ReadReport(j.Header(), j.Scan, false)
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	if b := r.Ledger.Baseline(); b != nil {
		id = b.ID
	}
	return id, len(r.Sessions)
}

// TestJournalBaseline: baseline appends the mark (by id or name), show and
// diff use it, --clear clears it; marking the baseline again or clearing
// none writes nothing.
func TestJournalBaseline(t *testing.T) {
	dir, file := journalDirWith(t)
	out, errOut, err := runCLI(t, nil, "journal", "baseline", file, "e2")
	if err != nil || errOut != "" {
		t.Fatalf("baseline e2: %v %s", err, errOut)
	}
	if want := `baseline: e2 "nccl-ll-ring @ 1a2b3c4" in ` + file + " (flightdeck journal diff " + file + " baseline B compares with it)\n"; out != want {
		t.Errorf("out %q, want %q", out, want)
	}
	if id, sessions := baselineOf(t, file); id != "e2" || sessions != 1 {
		t.Errorf("baseline %q after %d appended sessions", id, sessions)
	}
	out, _, err = runCLI(t, nil, "journal", "show", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"89.0 [88.8, 89.3] (n=20)          baseline  baseline", "62.5 [62.3, 62.8] (n=20)          -29.8%    no verdict: 1+1 launches", "\nbaseline  e2 ", "flightdeck " + versionString() + " pid "} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, nil, "journal", "diff", file, "baseline", "e3")
	if err != nil || !strings.HasPrefix(out, "A: e2 ") {
		t.Errorf("diff baseline e3: %v\n%s", err, out)
	}

	// Already the baseline: nothing written.
	before, _ := os.ReadFile(file)
	out, _, err = runCLI(t, nil, "journal", "baseline", "--dir", dir, "2026-11-29-1000", "nccl-ll-ring @ 1a2b3c4")
	if err != nil || out != `e2 "nccl-ll-ring @ 1a2b3c4" is the baseline of `+file+" already\n" {
		t.Errorf("again: %v %q", err, out)
	}
	if after, _ := os.ReadFile(file); len(after) != len(before) {
		t.Error("marking the baseline again wrote to the journal")
	}

	// By name, then cleared.
	if _, _, err := runCLI(t, nil, "journal", "baseline", file, "nccl-ll-ring @ 9f8e7d6"); err != nil {
		t.Fatal(err)
	}
	if id, _ := baselineOf(t, file); id != "e3" {
		t.Errorf("baseline %q, want e3 (by name)", id)
	}
	out, _, err = runCLI(t, nil, "journal", "baseline", file, "--clear")
	if err != nil || out != "baseline e3 cleared in "+file+"\n" {
		t.Errorf("--clear: %v %q", err, out)
	}
	if id, sessions := baselineOf(t, file); id != "" || sessions != 3 {
		t.Errorf("baseline %q after --clear (%d sessions)", id, sessions)
	}
	out, _, err = runCLI(t, nil, "journal", "baseline", file, "--clear")
	if err != nil || out != "no baseline is marked in "+file+": nothing to clear\n" {
		t.Errorf("--clear again: %v %q", err, out)
	}
	if _, sessions := baselineOf(t, file); sessions != 3 {
		t.Errorf("clearing nothing appended a session (%d)", sessions)
	}
}

// TestJournalBaselineRefuses: an unknown experiment, a live journal, no
// journal and bad arguments exit 2, and write nothing.
func TestJournalBaselineRefuses(t *testing.T) {
	_, file := journalDirWith(t)
	before, _ := os.ReadFile(file)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{file, "e9"}, `no experiment "e9" in ` + file + " (have e1, e2, e3)"},
		{[]string{file}, "give the experiment to mark (EXP: an id or a name), or --clear"},
		{[]string{file, "e1", "--clear"}, "--clear takes no EXP"},
		{[]string{file, "e1", "e2"}, "accepts between 1 and 2 arg(s), received 3"},
		{[]string{file + ".nope", "e1"}, "no such file"},
		{[]string{file, "e1", "--bogus"}, "unknown flag: --bogus"},
	} {
		_, errOut, err := runCLI(t, nil, append([]string{"journal", "baseline"}, tc.args...)...)
		wantRefused(t, errOut, err, tc.want)
	}

	// A cockpit writing it: refused.
	w, err := journal.Append(file, event.SessionHeader{Host: "demo", PID: 99})
	if err != nil {
		t.Fatal(err)
	}
	live, _ := os.ReadFile(file)
	_, errOut, err := runCLI(t, nil, "journal", "baseline", file, "e1")
	wantRefused(t, errOut, err, file+" is being written by a running cockpit: mark the baseline there (B in its x panel)")
	if after, _ := os.ReadFile(file); len(after) != len(live) {
		t.Error("a refused baseline wrote to the live journal")
	}
	w.Close()
	if after, _ := os.ReadFile(file); len(after) <= len(before) {
		t.Fatal("the test's own session was not written")
	}
	if id, _ := baselineOf(t, file); id != "" {
		t.Errorf("baseline %q after the refusals", id)
	}
}
