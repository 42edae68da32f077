package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// sessionJournal is the synthetic demo session of the report package's
// tests: e1 62.5 tok/s, e2 89 (nccl-ll-ring), e3 81.9 (the
// regressing commit).
const sessionJournal = "../../sessions/report/testdata/report-session.jsonl"

// journalDirWith copies the session journal into a fresh journals
// directory as demo/2026-11-29-100000-regression-hunt.jsonl and returns
// the directory and the file.
func journalDirWith(t *testing.T) (dir, file string) {
	t.Helper()
	b, err := os.ReadFile(sessionJournal)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	file = filepath.Join(dir, "demo", "2026-11-29-100000-regression-hunt.jsonl")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// wantRefused checks an exit status 2 with msg on stderr.
func wantRefused(t *testing.T, errOut string, err error, msg string) {
	t.Helper()
	var ec exitCode
	if !errors.As(err, &ec) || ec != exitRefused {
		t.Fatalf("err = %v, want exit status 2 (stderr %q)", err, errOut)
	}
	if !strings.Contains(errOut, msg) {
		t.Fatalf("stderr %q lacks %q", errOut, msg)
	}
}

func TestJournalLs(t *testing.T) {
	dir, file := journalDirWith(t)
	// A second, damaged journal: an experiment never ended, a garbled
	// line, a torn last line (a kill -9 mid-write).
	b, _ := os.ReadFile(file)
	lines := strings.SplitAfter(string(b), "\n")
	cut := 0
	for i, l := range lines {
		if strings.Contains(l, `"exp-end"`) && strings.Contains(l, `"e3"`) {
			cut = i
		}
	}
	damaged := strings.Join(lines[:cut], "") + "[12,\"note\",{\"text\":\"garb\n" + lines[cut-1] + `[200,"gpu-sam`
	torn := filepath.Join(dir, "demo", "2026-11-29-110000-crashed.jsonl")
	if err := os.WriteFile(torn, []byte(strings.Replace(damaged, "2026-11-29T10:00:00Z", "2026-11-29T11:00:00Z", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "demo", "notes.jsonl"), []byte("{\"hello\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	out, _, err := runCLI(t, nil, "journal", "ls", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"demo/2026-11-29-100000-regression-hunt.jsonl", "root@127.0.0.1:40123", "0:03:09",
		"e1  none @ 1a2b3c4         tok/s 62.5 [62.3, 62.8] (n=20)  relaunch",
		"e2  nccl-ll-ring @ 1a2b3c4 tok/s 89.0",
		"e3  nccl-ll-ring @ 9f8e7d6 tok/s 81.9",
		"demo/2026-11-29-110000-crashed.jsonl", "skipped: ", "crash",
		"demo/notes.jsonl  unreadable: ",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("ls lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "110000-crashed") > strings.Index(out, "100000-regression-hunt") {
		t.Errorf("not newest first:\n%s", out)
	}

	// A journal a cockpit is writing is "live"; its open experiment is
	// open, not crashed — but the one the crashed session left open was
	// ended by the crash. (Append cut its torn last line: only the garbled
	// one is left to report.)
	w, err := journal.Append(torn, event.SessionHeader{Host: "demo", PID: 99})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(event.Event{At: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), Data: event.ExperimentStart{ID: "e4", Name: "after", Trigger: event.TriggerKey}})
	if err := w.Flush(true); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, nil, "journal", "ls", "--dir", dir, "--json")
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var docs []journalLsJSON
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(docs) != 3 || !docs[0].Live || docs[1].Live || docs[2].Error == "" || docs[0].Problems == nil || docs[0].Problems.Garbled != 1 {
		t.Fatalf("ls --json: %s", out)
	}
	if e3 := docs[0].Experiments[2]; e3.EndedHow != "crash" {
		t.Errorf("live journal's e3 %+v, want ended by the crash", e3)
	}
	if e4 := docs[0].Experiments[3]; e4.EndedHow != "open" {
		t.Errorf("live journal's e4 %+v, want open", e4)
	}
	if e2 := docs[1].Experiments[1]; e2.Median == nil || *e2.Median < 88.5 || *e2.Median > 89.5 || e2.N != 20 || e2.Commit == "" {
		t.Errorf("e2 %+v", e2)
	}

	out, _, err = runCLI(t, nil, "journal", "ls", "--dir", filepath.Join(dir, "none"))
	if err != nil || !strings.Contains(out, "no journals in") {
		t.Errorf("empty dir: %q %v", out, err)
	}
}

func TestJournalShow(t *testing.T) {
	dir, file := journalDirWith(t)
	out, _, err := runCLI(t, nil, "journal", "show", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"host      root@127.0.0.1:40123 (demo)", "session   regression-hunt", "duration 0:03:09",
		"e2  nccl-ll-ring @ 1a2b3c4  1a2b3c4  nccl-ll-ring  89.0 [88.8, 89.3] (n=20)          +42.4%    no verdict: 1+1 launches; A/A noise unknown — R repeats a launch", "0:02:30 [e3] 8% slower"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	// By a unique prefix of the name under --dir, and one experiment by name.
	out, _, err = runCLI(t, nil, "journal", "show", "--dir", dir, "2026-11-29-10", "nccl-ll-ring @ 9f8e7d6")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"e3  nccl-ll-ring @ 9f8e7d6", "commit      9f8e7d6c5b4a39281706f5e4d3c2b1a098f7e6d5 on main: Fix PCG MoE Error",
		"dirty       patch 1.2 KiB, sha256 5d41402abc4b", "pynccl.py +2 -1", "untracked   bench.sh",
		"--api-key '<redacted>'", "env         HF_TOKEN=<redacted>", "env         NCCL_PROTO=LL",
		"version     nccl     unknown: the probe failed: timed out after 10s", "GPUs at end:", "sw-power", "n/a"} {
		if !strings.Contains(out, want) {
			t.Errorf("show e3 lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Error("a secret reached the output")
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "e2", "--json")
	var je report.JSONExperiment
	if err != nil || json.Unmarshal([]byte(out), &je) != nil || je.ID != "e2" || je.Fingerprint == nil {
		t.Fatalf("show e2 --json: %v\n%s", err, out)
	}

	_, errOut, err := runCLI(t, nil, "journal", "show", file, "e9")
	wantRefused(t, errOut, err, "experiment e9: not in")
	_, errOut, err = runCLI(t, nil, "journal", "show", "--dir", dir, "2027")
	wantRefused(t, errOut, err, "no journal in "+dir+" starts with it")
	_, errOut, err = runCLI(t, nil, "journal", "show", "--dir", dir, filepath.Join(dir, "nope.jsonl"))
	wantRefused(t, errOut, err, "no such file")
	_, errOut, err = runCLI(t, nil, "journal", "show", "testdata")
	wantRefused(t, errOut, err, "is a directory")
	notJournal := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(notJournal, []byte("hello\n"), 0o600)
	_, errOut, err = runCLI(t, nil, "journal", "show", notJournal)
	wantRefused(t, errOut, err, "not a flightdeck journal")
	_, errOut, err = runCLI(t, nil, "journal", "show")
	wantRefused(t, errOut, err, "accepts between 1 and 2 arg(s)")

	// Two journals starting alike: ambiguous.
	b, _ := os.ReadFile(file)
	os.WriteFile(filepath.Join(dir, "demo", "2026-11-29-100500-other.jsonl"), b, 0o600)
	_, errOut, err = runCLI(t, nil, "journal", "show", "--dir", dir, "2026-11-29-10")
	wantRefused(t, errOut, err, "is ambiguous: 2 journals start with it")
}

func TestJournalExport(t *testing.T) {
	_, file := journalDirWith(t)
	out, _, err := runCLI(t, nil, "journal", "export", file, "--format", "md")
	if err != nil {
		t.Fatal(err)
	}
	// The report is the report package's golden but for the journal's
	// path.
	golden, err := os.ReadFile("../../sessions/report/testdata/report.md")
	if err != nil {
		t.Fatal(err)
	}
	dropJournalLine := func(s string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "- **Journal:**") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if dropJournalLine(out) != dropJournalLine(string(golden)) {
		t.Errorf("md export differs from sessions/report/testdata/report.md:\n%s", out)
	}
	if !strings.Contains(out, "- **Journal:** `"+file+"`") {
		t.Errorf("md export does not name the journal")
	}

	out, _, err = runCLI(t, nil, "journal", "export", file, "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	steady := 0
	for _, r := range rows[1:] {
		if r[6] == "true" {
			steady++
		}
	}
	if strings.Join(rows[0], ",") != "t_s,time,exp,name,tok_s,accept_length,steady" || steady != 60 {
		t.Errorf("tok csv: header %v, %d steady rows (want 60 = 3 x n=20)", rows[0], steady)
	}

	outFile := filepath.Join(t.TempDir(), "gpus.csv")
	_, errOut, err := runCLI(t, nil, "journal", "export", file, "--format", "csv", "--samples", "gpu", "-o", outFile)
	if err != nil || !strings.Contains(errOut, "wrote "+outFile) {
		t.Fatalf("%v %q", err, errOut)
	}
	b, _ := os.ReadFile(outFile)
	rows, err = csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 39 || rows[0][13] != "throttle" {
		t.Fatalf("gpu csv: %v, %d rows\n%s", err, len(rows), b)
	}

	out, _, err = runCLI(t, nil, "journal", "export", file, "--format", "json", "--baseline", "e2")
	var doc report.JSONReport
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	if doc.Baseline != "e2" || doc.Experiments[2].DeltaPct == nil || *doc.Experiments[2].DeltaPct > -7.5 || *doc.Experiments[2].DeltaPct < -8.5 {
		t.Errorf("json vs e2: baseline %q, e3 %+v", doc.Baseline, doc.Experiments[2].DeltaPct)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "pdf"}, `--format "pdf": want md, csv or json`},
		{nil, "--format is required"},
		{[]string{"--format", "md", "--samples", "gpu"}, "--samples goes with --format csv"},
		{[]string{"--format", "csv", "--samples", "power"}, `--samples "power": want tok or gpu`},
		{[]string{"--format", "md", "--baseline", "e7"}, `baseline "e7": no such experiment (have e1, e2, e3)`},
		{[]string{"--format", "md", "--bogus"}, "unknown flag: --bogus"},
	} {
		_, errOut, err := runCLI(t, nil, append([]string{"journal", "export", file}, c.args...)...)
		wantRefused(t, errOut, err, c.want)
	}
	// A failed export leaves the previous file as it was.
	os.WriteFile(outFile, []byte("previous"), 0o644)
	runCLI(t, nil, "journal", "export", file, "--format", "md", "--baseline", "e7", "-o", outFile)
	if b, _ := os.ReadFile(outFile); string(b) != "previous" {
		t.Errorf("a refused export touched -o: %q", b)
	}
	// A written export is 0600, as the journal (it may hold a dirty patch).
	if _, _, err := runCLI(t, nil, "journal", "export", file, "--format", "json", "-o", outFile); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(outFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("export mode %v %v, want 0600", fi.Mode(), err)
	}
}

func TestReplayFlags(t *testing.T) {
	_, file := journalDirWith(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--speed", "3"}, "--speed 3: want 1, 2, 4, 8, 16, 32 or 64"},
		{[]string{"--speed", "128"}, "--speed 128"},
		{[]string{"--at", "1:99"}, `--at "1:99": not a time: use h:mm:ss`},
		{[]string{"--at", "4:00"}, "--at 4:00 is past the end of"},
	} {
		_, errOut, err := runCLI(t, nil, append([]string{"replay", file}, c.args...)...)
		wantRefused(t, errOut, err, c.want)
	}
	_, _, err := runCLI(t, nil, "replay", file, "--at", "2:07")
	if err == nil || !strings.Contains(err.Error(), "needs a terminal") {
		t.Errorf("err = %v, want the terminal error", err)
	}
	_, errOut, err := runCLI(t, nil, "replay")
	wantRefused(t, errOut, err, "accepts 1 arg(s)")
}

// TestJournalFlagsContradict: --journal with --no-journal, and --name with
// --no-journal, are refused before anything is set up.
func TestJournalFlagsContradict(t *testing.T) {
	for _, args := range [][]string{{"demo", "--journal", "x.jsonl", "--no-journal"}, {"connect", "local", "--no-journal", "--name", "x"}} {
		_, _, err := runCLI(t, nil, args...)
		if err == nil || (!strings.Contains(err.Error(), "choose one") && !strings.Contains(err.Error(), "does nothing with --no-journal")) {
			t.Errorf("%v: err = %v", args, err)
		}
	}
}

// TestJournalShowGPUEvents: journal show lists the session's Xids and
// sampling-path changes, and an experiment's own Xids in its view.
func TestJournalShowGPUEvents(t *testing.T) {
	_, file := journalDirWith(t)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Before the last line, e3's end.
	last := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
	events := `[160,"gpu-source",{"Mode":"nvidia-smi","Detail":"","Fallback":"agent exited: signal: killed"}]
[161,"gpu-xid",{"Index":3,"UUID":"GPU-3","BusID":"00000000:83:00.0","Code":79}]
[161.2,"gpu-xid",{"Index":1,"UUID":"GPU-1","BusID":"00000000:1B:00.0","Code":13}]
[161.4,"gpu-xid",{"Index":1,"UUID":"GPU-1","BusID":"00000000:1B:00.0","Code":13}]
`
	if !bytes.Contains(b[last:], []byte(`"exp-end"`)) {
		t.Fatalf("the session journal's last line is not e3's end: %s", b[last:])
	}
	if err := os.WriteFile(file, slices.Concat(b[:last], []byte(events), b[last:]), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, nil, "journal", "show", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GPU events (Xids, sampling path)\n",
		"  0:02:40 [e3] GPUs sampled by nvidia-smi: agent exited: signal: killed\n",
		"  0:02:41 [e3] GPU 3 (00000000:83:00.0) Xid 79: GPU has fallen off the bus; critical: the GPU needs a reset before its results can be trusted\n",
		"  0:02:41 [e3] GPU 1 (00000000:1B:00.0) Xid 13: graphics engine exception (application fault, e.g. an illegal memory access) x2 (until 0:02:41)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, nil, "journal", "show", file, "e3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "  Xid         0:02:41 GPU 3 (00000000:83:00.0) Xid 79: GPU has fallen off the bus; critical") {
		t.Errorf("show e3 lacks its Xid:\n%s", out)
	}
	if out, _, _ := runCLI(t, nil, "journal", "show", file, "e1"); strings.Contains(out, "Xid") {
		t.Errorf("show e1 has another experiment's Xid:\n%s", out)
	}
	// A comparison says that one run had Xids, beside its output.
	out, errOut, err := runCLI(t, nil, "journal", "diff", file, "e2", "e3", "--format", "json")
	if err != nil || !json.Valid([]byte(out)) {
		t.Fatalf("diff: %v\n%s", err, out)
	}
	if !strings.Contains(errOut, "flightdeck: e3 ran with an Xid at 0:02:41: GPU 3 (00000000:83:00.0) Xid 79") ||
		strings.Count(errOut, "ran with an Xid") != 2 || strings.Contains(errOut, "e2 ran") {
		t.Errorf("diff's stderr %q does not name e3's two Xids", errOut)
	}
}
