package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestJournalNoteAndConclude: journal note and journal conclude write what
// the cockpit's n and w write, in a session appended to the journal, and
// journal show lists them; bad input is refused with exit status 2 and
// leaves the file alone.
func TestJournalNoteAndConclude(t *testing.T) {
	dir, file := journalDirWith(t)
	out, errOut, err := runCLI(t, nil, "journal", "note", file, "  the pull between e2 and e3 brought 1a2b3c5  ")
	if err != nil || errOut != "" || out != "note added to "+file+": the pull between e2 and e3 brought 1a2b3c5\n" {
		t.Fatalf("note: %v %q %q", err, out, errOut)
	}
	out, errOut, err = runCLI(t, nil, "journal", "conclude", "--dir", dir, "2026-11-29-1000", "e3", "the regression is the pull")
	if err != nil || errOut != "" || !strings.HasPrefix(out, `conclusion of e3 "`) || !strings.HasSuffix(out, ": the regression is the pull\n") {
		t.Fatalf("conclude: %v %q %q", err, out, errOut)
	}
	j, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	var notes, updates, sessions int
	j.Scan(func(e event.Event) error {
		switch p := e.Data.(type) {
		case event.Note:
			if strings.Contains(p.Text, "brought 1a2b3c5") {
				notes++
			}
		case event.ExperimentUpdate:
			if p.Exp == "e3" && p.Conclusion == "the regression is the pull" {
				updates++
			}
		case event.Session:
			if p.Label == "journal note" || p.Label == "journal conclude" {
				sessions++
			}
		}
		return nil
	})
	j.Close()
	if notes != 1 || updates != 1 || sessions != 2 {
		t.Errorf("the journal holds %d notes, %d conclusions and %d sessions of the commands, want 1 each and 2", notes, updates, sessions)
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "e3")
	if err != nil || !strings.Contains(out, "the regression is the pull") {
		t.Errorf("show e3: %v\n%s", err, out)
	}

	before := readFile(t, file)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"note", file, "  "}, "an empty note"},
		{[]string{"conclude", file, "e9", "x"}, `no experiment "e9" in ` + file + " (have e1, e2, e3)"},
		{[]string{"conclude", file, "e3", ""}, "an empty conclusion"},
		{[]string{"note", file + ".nope", "x"}, "no such file"},
		{[]string{"conclude", file, "e3"}, "accepts 3 arg(s), received 2"},
	} {
		_, errOut, err := runCLI(t, nil, append([]string{"journal"}, tc.args...)...)
		wantRefused(t, errOut, err, tc.want)
	}
	if readFile(t, file) != before {
		t.Error("a refused command changed the journal")
	}
	// A journal a cockpit writes is refused: the key is there.
	w, err := journal.Append(file, event.SessionHeader{Host: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, errOut, err = runCLI(t, nil, "journal", "note", file, "x")
	wantRefused(t, errOut, err, "is being written by a running cockpit: press n there")
}

// readFile is the file's content, failing the test when it cannot be read.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExperimentStartCLI: experiment start measures the running server as
// e does twice in the cockpit: an experiment with its name, hypothesis,
// fingerprint, tok/s result and conclusion in the journal, the result and
// the journal printed; without a server it says so and exits 1.
func TestExperimentStartCLI(t *testing.T) {
	_, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }
	path := filepath.Join(t.TempDir(), "ab.jsonl")
	_, stderr, err := runCLI(t, nil, args("experiment", "start", "sim", "--journal", path, "--samples", "5", "--for", "20s")...)
	if err == nil || !strings.Contains(err.Error(), "no server running") {
		t.Errorf("without a server: %v\n%s", err, stderr)
	}
	if _, stderr, err := runCLI(t, nil, args("server", "launch", "sim", "--timeout", "60s")...); err != nil {
		t.Fatalf("launch: %v\n%s", err, stderr)
	}
	out, stderr, err := runCLI(t, nil, args("experiment", "start", "sim", "--journal", path, "--samples", "5", "--for", "2m",
		"--name", "untuned", "--hypothesis", "62.5 without NCCL tuning", "--conclusion", "as expected")...)
	wantExit(t, err, 0, "experiment start:\n"+stderr)
	if !strings.Contains(stderr, `experiment e1 "untuned" started`) || !strings.Contains(out, "e1: tok/s 6") || !strings.Contains(out, "ended: by hand") ||
		!strings.Contains(out, "journal: "+path) {
		t.Errorf("output:\n%s%s", out, stderr)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var start event.ExperimentStart
	var end event.ExperimentEnd
	var fp bool
	j.Scan(func(e event.Event) error {
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			start = p
		case event.ExperimentEnd:
			end = p
		case event.ExperimentFingerprint:
			fp = p.Fingerprint.Launch != nil && p.Fingerprint.Git != nil
		}
		return nil
	})
	if start.Name != "untuned" || start.Hypothesis != "62.5 without NCCL tuning" || end.Conclusion != "as expected" || end.Result.N < 5 || !fp {
		t.Errorf("journal: start %+v, end %+v, fingerprint with launch and git %v", start, end, fp)
	}
	if _, _, err := runCLI(t, nil, args("server", "kill", "sim", "--yes", "--grace", "2s")...); err != nil {
		t.Logf("kill: %v", err)
	}
}
