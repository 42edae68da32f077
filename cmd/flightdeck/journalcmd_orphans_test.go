package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// A garbled exp-start line loses that experiment from the table, but
// journal show says so and keeps what its other records hold: the
// fingerprint's commit and profile, the end and its result.
func TestJournalShowReportsAnExperimentWhoseStartIsGarbled(t *testing.T) {
	dir, file := journalDirWith(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	garbled := 0
	for i, l := range lines {
		if strings.Contains(l, `"exp-start"`) && strings.Contains(l, `"id":"e2"`) {
			lines[i] = l[:len(l)/2] + "\x00\n" // bit rot in the middle of the line
			garbled++
		}
	}
	if garbled != 1 {
		t.Fatalf("the fixture has %d exp-start lines of e2, want 1", garbled)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, nil, "journal", "show", file, "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"skipped 1 garbled line(s)",
		"records of experiments whose exp-start is missing",
		"e2 exp-fingerprint, note, exp-end, first at 0:01:05; commit 1a2b3c4, profile nccl-ll-ring; ended at 0:02:07 (relaunch): 89.0",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("journal show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\ne2  nccl") {
		t.Errorf("e2 is in the table without its start:\n%s", out)
	}
	md, _, err := runCLI(t, nil, "journal", "export", file, "--format", "md", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md, "exp-start line is missing") || !strings.Contains(md, "> - e2: exp-fingerprint, note, exp-end; commit `1a2b3c4`; ended: 89.0") {
		t.Errorf("the md export does not warn of e2:\n%s", md)
	}
	js, _, err := runCLI(t, nil, "journal", "export", file, "--format", "json", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var doc report.JSONReport
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Orphans) != 1 || doc.Orphans[0].ID != "e2" || !strings.HasPrefix(doc.Orphans[0].Commit, "1a2b3c4") ||
		doc.Orphans[0].Result == nil || doc.Orphans[0].Result.N != 20 || doc.Orphans[0].EndedBy != "relaunch" {
		t.Errorf("the json export's orphans: %+v", doc.Orphans)
	}
	_, errOut, err := runCLI(t, nil, "journal", "show", file, "e2", "--dir", dir)
	wantRefused(t, errOut, err, "experiment e2: its exp-start line in "+file+" is missing")
}
