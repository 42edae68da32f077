package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var updateReport = flag.Bool("update-report", false, "rewrite testdata/report* and testdata/diff* goldens")

// scanOf is a ScanFunc over an in-memory event list.
func scanOf(es []event.Event) ScanFunc {
	return func(fn func(event.Event) error) error {
		for _, e := range es {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
}

func sessionReport(t *testing.T) *Report {
	t.Helper()
	h, es := reportSession()
	r, err := ReadReport(h, scanOf(es), false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// golden compares got with testdata/name, or rewrites it with -update-report.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateReport {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./sessions/report -run %s -update-report)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden (go test ./sessions/report -run %s -update-report to accept):\n%s", name, t.Name(), got)
	}
}

// TestReportTellsTheStory: the demo's session gives 62.5, 89 and ~81.9
// tok/s, with deltas against the baseline and between neighbours.
func TestReportTellsTheStory(t *testing.T) {
	r := sessionReport(t)
	exps := r.Ledger.Experiments()
	if len(exps) != 3 {
		t.Fatalf("%d experiments, want 3", len(exps))
	}
	for i, want := range []float64{62.5, 89, 81.9} {
		res := exps[i].Result
		if res.N < 15 || res.Median < want-0.5 || res.Median > want+0.5 || res.Lo == nil || res.Hi == nil {
			t.Errorf("%s: %s, want a bounded median near %.1f", exps[i].ID, FormatResult(res), want)
		}
	}
	if p, ok := compare.DeltaPct(&exps[1], &exps[0]); !ok || p < 41 || p > 44 {
		t.Errorf("e2 vs e1 %.1f%%, want about +42.4%%", p)
	}
	if p, ok := compare.DeltaPct(&exps[2], &exps[1]); !ok || p > -7 || p < -9 {
		t.Errorf("e3 vs e2 %.1f%%, want about -8%%", p)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{Path: "/home/ana/.local/state/flightdeck/journals/demo/2026-11-29-100000-regression-hunt.jsonl"}); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, want := range []string{
		"| e1 | none @ 1a2b3c4 | 1a2b3c4 | none | 62.", "| baseline | relaunch |",
		"| e2 | nccl-ll-ring @ 1a2b3c4 | 1a2b3c4 | nccl-ll-ring | 89.", "| +42.",
		"| e3 | nccl-ll-ring @ 9f8e7d6 | 9f8e7d6 | nccl-ll-ring | 81.", "| quit |",
		"**e2 -> e3**: -8.", "commit 1a2b3c4 -> 9f8e7d6 (\"Fix PCG MoE Error\")",
		"**e1 -> e2**: +42.", "profile none -> nccl-ll-ring",
		"git pull moved HEAD 1a2b3c4 -> 9f8e7d6 (3 commits forward; 5 files: nightly.yml, pynccl.py, parallel_state.py, scheduler.py, ...) at 0:02:04",
		"0:00:30 (e1) baseline flat at 62.5",
		"failed: nccl (timed out after 10s)",
		"GPUs at end:** 2x NVIDIA H200: SM 1755-1980 MHz",
		"throttle none (GPU 0), sw-power (GPU 1)",
		"Duration:** 0:03:09",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Secrets and escape codes never reach the report.
	for _, bad := range []string{"s3cret", "\x1b", "\x07"} {
		if strings.Contains(out, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
	golden(t, "report.md", md.Bytes())
}

func TestReportBaselineOption(t *testing.T) {
	r := sessionReport(t)
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{Baseline: "nccl-ll-ring @ 1a2b3c4"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| vs e2 | verdict vs e2 (across launches) | ended |") || !strings.Contains(md.String(), "| baseline | baseline | relaunch |\n| e3") {
		t.Errorf("baseline by name not used:\n%s", md.String())
	}
	err := WriteMarkdown(&md, r, ReportOptions{Baseline: "e9"})
	if err == nil || !strings.Contains(err.Error(), `baseline "e9": no such experiment (have e1, e2, e3)`) {
		t.Errorf("err = %v", err)
	}
	if err := WriteJSON(&md, r, ReportOptions{Baseline: "e9"}); err == nil {
		t.Error("JSON with an unknown baseline: no error")
	}
}

// TestReportCSV: the tok/s CSV reads back with encoding/csv, one row per
// non-dropped rate; the steady rows are exactly each experiment's result
// samples.
func TestReportCSV(t *testing.T) {
	r := sessionReport(t)
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	golden(t, "report-tok.csv", b.Bytes())
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != "t_s,time,exp,name,tok_s,accept_length,steady" {
		t.Fatalf("header %v", rows[0])
	}
	if len(rows)-1 != len(r.Rates) {
		t.Fatalf("%d rows for %d rates", len(rows)-1, len(r.Rates))
	}
	steady := map[string][]float64{}
	for _, row := range rows[1:] {
		if _, err := strconv.ParseFloat(row[0], 64); err != nil {
			t.Fatalf("t_s %q: %v", row[0], err)
		}
		if _, err := time.Parse(time.RFC3339, row[1]); err != nil {
			t.Fatalf("time %q: %v", row[1], err)
		}
		v, err := strconv.ParseFloat(row[4], 64)
		if err != nil {
			t.Fatal(err)
		}
		if row[6] == "true" {
			steady[row[2]] = append(steady[row[2]], v)
		} else if row[6] != "false" {
			t.Fatalf("steady %q", row[6])
		}
		if v < 0.5 {
			t.Errorf("a dropped idle-gap artefact was written: %v", row)
		}
	}
	for _, x := range r.Ledger.Experiments() {
		if got, want := steady[x.ID], x.Result.Samples; !equalFloats(got, want) {
			t.Errorf("%s steady rows %v, result samples %v", x.ID, got, want)
		}
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReportGPUCSV: one row per GPU per sample; a non-value is an empty
// cell, never 0.
func TestReportGPUCSV(t *testing.T) {
	h, es := reportSession()
	var b bytes.Buffer
	if err := WriteGPUCSV(&b, h, scanOf(es)); err != nil {
		t.Fatal(err)
	}
	golden(t, "report-gpu.csv", b.Bytes())
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(GPUCSVHeader, ",") {
		t.Fatalf("header %v", rows[0])
	}
	if len(rows)-1 != 19*2 {
		t.Errorf("%d rows, want 38 (19 samples x 2 GPUs)", len(rows)-1)
	}
	var sawNA, sawExp bool
	for _, row := range rows[1:] {
		if row[3] == "1" && row[11] == "5" && row[6] == "" && row[13] == "sw-power" {
			sawNA = true
		}
		if row[6] == "0" {
			t.Errorf("power 0 written: %v", row)
		}
		if row[2] == "e2" {
			sawExp = true
		}
	}
	if !sawNA || !sawExp {
		t.Errorf("no row with GPU 1's [N/A] power as an empty cell (%v) or in e2 (%v)", sawNA, sawExp)
	}
}

func TestReportJSON(t *testing.T) {
	r := sessionReport(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", b.Bytes())
	if bytes.Contains(b.Bytes(), []byte("s3cret")) {
		t.Error("a secret argv value reached the JSON")
	}
	var doc JSONReport
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Format != ReportFormat || doc.Baseline != "e1" || len(doc.Experiments) != 3 || len(doc.Notes) != 4 {
		t.Fatalf("doc %+v", doc)
	}
	e2 := doc.Experiments[1]
	if e2.DeltaPct == nil || *e2.DeltaPct < 41 || e2.EndedHow != "relaunch" || e2.Commit != baselineHead || e2.Profile != "nccl-ll-ring" {
		t.Errorf("e2 %+v", e2)
	}
	if g := e2.EndGPUs[1]; g.PowerW != nil || g.SMMHz == nil || *g.SMMHz != 1755 || len(g.Throttle) != 1 {
		t.Errorf("e2 end GPU 1 %+v: want null power, 1755 MHz, sw-power", g)
	}
}

// TestReportCrashedAndLive: an experiment open at the end of a finished
// journal is ended by a crash at the last event; in a live journal it is
// open.
func TestReportCrashedAndLive(t *testing.T) {
	h := reportHeader()
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	es := []event.Event{
		{At: at(1), Data: event.ExperimentStart{ID: "e1", Name: "x | y\nz", Trigger: event.TriggerKey}},
		{At: at(2), Data: event.TokRate{TokPerSec: 50}},
		{At: at(3), Data: event.GPUSample{At: at(3)}},
	}
	for _, live := range []bool{false, true} {
		r, err := ReadReport(h, scanOf(es), live)
		if err != nil {
			t.Fatal(err)
		}
		x := r.Ledger.Experiments()[0]
		want := "crash"
		if live {
			want = "open"
		}
		if got := EndedHow(&x); got != want {
			t.Errorf("live %v: ended %q, want %q", live, got, want)
		}
		if !live && !x.Ended.Equal(at(3)) {
			t.Errorf("ended at %v, want the last event's time", x.Ended)
		}
		var md bytes.Buffer
		if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md.String(), `| e1 | x \| y z | unknown | - | no samples | - | - | `+want+" |") {
			t.Errorf("live %v: table row not escaped or wrong:\n%s", live, md.String())
		}
	}
}

func TestReportNoExperiments(t *testing.T) {
	r, err := ReadReport(reportHeader(), scanOf(nil), false)
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "No experiments were recorded.") || !strings.Contains(md.String(), "No notes.") {
		t.Errorf("%s", md.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, r, ReportOptions{}); err != nil || !strings.Contains(js.String(), `"experiments": []`) {
		t.Errorf("%v %s", err, js.String())
	}
}

func TestMarkdownEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":           "plain text",
		"a|b":                  `a\|b`,
		"*bold* [link](x) <b>": `\*bold\* \[link\](x) \<b>`,
		"NCCL_ALGO=Ring":       "NCCL_ALGO=Ring",
		"_emph_":               `\_emph\_`,
		"two\nlines":           "two lines",
		"esc\x1b[31mred":       "escred",
		"`code`":               "\\`code\\`",
	} {
		if got := mdText(in); got != want {
			t.Errorf("mdText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := mdCode("a ` b"); got != "``a ` b``" {
		t.Errorf("mdCode = %q", got)
	}
}

// TestReportSessionFile: the synthetic session written as a journal file
// (testdata/report-session.jsonl, made by this test with -update-report)
// reads back into the same report as the events it was made from: the
// goldens hold for the file too.
func TestReportSessionFile(t *testing.T) {
	path := filepath.Join("testdata", "report-session.jsonl")
	h, es := reportSession()
	if *updateReport {
		os.Remove(path)
		writeJournalFile(t, path, h, es)
	}
	r, j := readJournalFile(t, path)
	var md, js, tok, gpus bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{Path: "/home/ana/.local/state/flightdeck/journals/demo/2026-11-29-100000-regression-hunt.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&tok, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteGPUCSV(&gpus, j.Header(), j.Scan); err != nil {
		t.Fatal(err)
	}
	if *updateReport {
		return // the goldens are written by the tests over the events
	}
	for name, got := range map[string][]byte{"report.md": md.Bytes(), "report.json": js.Bytes(), "report-tok.csv": tok.Bytes(), "report-gpu.csv": gpus.Bytes()} {
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s from the journal file differs from the golden:\n%s", name, got)
		}
	}
}

// FuzzMarkdownText: typed or remote text never breaks out of its table
// cell or line, and never carries a control character.
func FuzzMarkdownText(f *testing.F) {
	for _, s := range []string{"a|b", "x\ny", "\x1b]52;c;ZXZpbA==\x07", "<script>", "`a`|`b`", "\\|", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := mdText(s)
		for i, r := range got {
			if r < 0x20 || r == 0x7f || r == '\u202e' {
				t.Fatalf("mdText(%q) = %q: control %U", s, got, r)
			}
			if r == '|' && (i == 0 || got[i-1] != '\\') {
				t.Fatalf("mdText(%q) = %q: unescaped |", s, got)
			}
		}
	})
}

// TestActionTextNamesTheFiles: a checkout that recorded the files it
// brought in names them; an older one without them says how to list them.
func TestActionTextNamesTheFiles(t *testing.T) {
	a := event.GitAction{Op: "checkout", From: "a6d51c005def", To: "65b09bf80650", Snapshot: "s1",
		Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "python/sglang/srt/distributed/parallel_state.py"}, FilesTotal: 2}
	if got, want := actionText(a), "flightdeck checkout moved HEAD a6d51c0 -> 65b09bf (2 files: pynccl.py, parallel_state.py) (undo: snapshot s1)"; got != want {
		t.Errorf("actionText:\n got %q\nwant %q", got, want)
	}
	a.Files, a.FilesTotal = nil, 0
	if got := actionText(a); !strings.Contains(got, "files changed not recorded: git diff --stat a6d51c0 65b09bf") {
		t.Errorf("without files: %q", got)
	}
}

// TestReportLiveShowsResultSoFar: the open experiment of a journal being
// written carries its result so far (journal ls and show while the
// cockpit runs), as the cockpit's panel shows it.
func TestReportLiveShowsResultSoFar(t *testing.T) {
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	es := []event.Event{{At: at(0), Data: event.ExperimentStart{ID: "e1", Name: "run", Trigger: event.TriggerKey}}}
	for i := 1; i <= 40; i++ {
		es = append(es, event.Event{At: at(i), Data: event.TokRate{TokPerSec: 88 + float64(i%3)}})
	}
	r, err := ReadReport(reportHeader(), scanOf(es), true)
	if err != nil {
		t.Fatal(err)
	}
	x := r.Ledger.Experiments()[0]
	if x.Result.N < 20 || x.Result.Median != 89 || EndedHow(&x) != "open" {
		t.Errorf("live open experiment: %s, %q", FormatResult(x.Result), EndedHow(&x))
	}
}

// TestReportGPUCSVAfterCrash: GPU rows after a resumed session do not
// belong to the experiment the crashed session left open.
func TestReportGPUCSVAfterCrash(t *testing.T) {
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	sample := event.GPUSample{GPUs: []event.GPU{{Index: 0}}}
	es := []event.Event{
		{At: at(1), Data: event.ExperimentStart{ID: "e1", Name: "a", Trigger: event.TriggerKey}},
		{At: at(2), Data: sample},
		{At: at(10), Data: event.Session{SessionHeader: reportHeader()}},
		{At: at(11), Data: sample},
	}
	var b bytes.Buffer
	if err := WriteGPUCSV(&b, reportHeader(), scanOf(es)); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1][2] != "e1" || rows[2][2] != "" {
		t.Errorf("rows %q: want the first in e1, the one after the new session in none", rows)
	}
}

// TestReportGPUEvents: Xids and sampling-path changes are kept with their
// times and experiments; a storm of one Xid on one GPU is one entry with a
// count, per experiment; a repeated sampling path (a second session of the
// journal) is not a change; hostile bus ids are sanitised. The exports
// carry them.
func TestReportGPUEvents(t *testing.T) {
	h := reportHeader()
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	es := []event.Event{
		{At: at(1), Data: event.GPUSource{Mode: event.SourceAgent, Detail: "agent 0.9.0"}},
		{At: at(2), Data: event.ExperimentStart{ID: "e1", Name: "base", Trigger: event.TriggerKey}},
		{At: at(3), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(3), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(4), Data: event.Xid{Index: 2, Code: 13}},
		{At: at(5), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(6), Data: event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "agent exited: signal: killed"}},
		{At: at(7), Data: event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKey}},
		{At: at(8), Data: event.ExperimentStart{ID: "e2", Name: "next", Trigger: event.TriggerKey}},
		{At: at(9), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(10), Data: event.Xid{Index: 3, BusID: "00000000:83:00.0\x1b[2J", Code: 79}},
		{At: at(11), Data: event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "agent exited: signal: killed"}},
		{At: at(12), Data: event.Xid{Index: -1, Code: 48}},
	}
	r, err := ReadReport(h, scanOf(es), false)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		t, last int
		exp     string
		n       int
		what    string
		crit    bool
	}
	want := []ev{
		{1, 1, "", 1, "GPUs sampled by the agent (NVML on the host) [agent 0.9.0]", false},
		{3, 5, "e1", 3, "GPU 1 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)", false},
		{4, 4, "e1", 1, "GPU 2 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)", false},
		{6, 6, "e1", 1, "GPUs sampled by nvidia-smi: agent exited: signal: killed", false},
		{9, 9, "e2", 1, "GPU 1 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access)", false},
		{10, 10, "e2", 1, "GPU 3 (00000000:83:00.0[2J) Xid 79: GPU has fallen off the bus", true},
		{12, 12, "e2", 1, "a GPU NVML did not name Xid 48: double-bit ECC error (DBE)", true},
	}
	if len(r.GPUEvents) != len(want) {
		t.Fatalf("%d GPU events, want %d: %+v", len(r.GPUEvents), len(want), r.GPUEvents)
	}
	for i, w := range want {
		g := r.GPUEvents[i]
		if !g.At.Equal(at(w.t)) || !g.Last.Equal(at(w.last)) || g.Exp != w.exp || g.Count != w.n || g.Critical != w.crit {
			t.Errorf("event %d: %+v, want %+v", i, g, w)
		}
		if !strings.HasPrefix(g.What, strings.Split(w.what, "[2J")[0]) || strings.ContainsRune(g.What, 0x1b) {
			t.Errorf("event %d: %q, want %q without escape codes", i, g.What, w.what)
		}
	}
	if got := r.ExpXids("e1"); len(got) != 2 || got[0].Count != 3 {
		t.Errorf("e1's Xids %+v", got)
	}
	if d := r.GPUEvents[1].Describe(reportStart); d != "GPU 1 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access) x3 (until 0:00:05)" {
		t.Errorf("Describe %q", d)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## GPU events", "- 0:00:03 [e1] GPU 1 Xid 13: graphics engine exception (application fault, e.g. an illegal memory access) x3 (until 0:00:05)\n",
		"[e2] GPU 3 (00000000:83:00.0", "fallen off the bus; critical: the GPU needs a reset"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("Markdown lacks %q:\n%s", s, md.String())
		}
	}
	doc, err := BuildJSON(r, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.GPUEvents) != len(want) || doc.GPUEvents[1].Count != 3 || doc.GPUEvents[1].LastT != 5 || doc.GPUEvents[5].Xid != 79 || !doc.GPUEvents[5].Critical {
		t.Errorf("JSON GPU events %+v", doc.GPUEvents)
	}
}

// TestReportCriticalXidCarriesOver: a critical Xid stays with the
// experiments after it in the same cockpit session (the GPU needs a reset:
// a result measured on it is suspect), a non-critical one does not, and a
// new session of the journal (perhaps after a reboot) starts clean.
// Identical Xids on either side of an experiment are two entries.
func TestReportCriticalXidCarriesOver(t *testing.T) {
	h := reportHeader()
	at := func(s int) time.Time { return reportStart.Add(time.Duration(s) * time.Second) }
	es := []event.Event{
		{At: at(1), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(2), Data: event.ExperimentStart{ID: "e1", Name: "a", Trigger: event.TriggerKey}},
		{At: at(3), Data: event.Xid{Index: 5, Code: 79}},
		{At: at(4), Data: event.Xid{Index: 2, Code: 13}},
		{At: at(5), Data: event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKey}},
		{At: at(6), Data: event.Xid{Index: 1, Code: 13}},
		{At: at(7), Data: event.ExperimentStart{ID: "e2", Name: "b", Trigger: event.TriggerKey}},
		{At: at(8), Data: event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerKey}},
		{At: at(9), Data: event.Session{SessionHeader: event.SessionHeader{Host: "h"}}},
		{At: at(10), Data: event.ExperimentStart{ID: "e3", Name: "c", Trigger: event.TriggerKey}},
		{At: at(11), Data: event.ExperimentEnd{Exp: "e3", Trigger: event.TriggerKey}},
	}
	r, err := ReadReport(h, scanOf(es), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.GPUEvents) != 4 || r.GPUEvents[0].Count != 1 || r.GPUEvents[3].Count != 1 {
		t.Fatalf("GPU events %+v: want the two GPU 1 Xid 13s apart (e1 ran between them)", r.GPUEvents)
	}
	e2 := r.ExpXids("e2")
	if len(e2) != 1 || e2[0].Xid != 79 || !e2[0].Before("e2") {
		t.Errorf("e2's Xids %+v, want e1's critical Xid 79, inherited", e2)
	}
	if e1 := r.ExpXids("e1"); len(e1) != 2 || e1[0].Before("e1") || e1[1].Before("e1") {
		t.Errorf("e1's Xids %+v, want its own two", e1)
	}
	if e3 := r.ExpXids("e3"); len(e3) != 0 {
		t.Errorf("e3, in a new session, inherits %+v", e3)
	}
	if r.ExpXids("e9") != nil {
		t.Error("an unknown experiment has Xids")
	}
	// The exports say it in e2's own section and record.
	var md bytes.Buffer
	if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	e2md := md.String()[strings.Index(md.String(), "## e2 b"):]
	if !strings.Contains(e2md, "- **Xid** at 0:00:03 (earlier in this cockpit session): GPU 5 Xid 79: GPU has fallen off the bus; critical") {
		t.Errorf("e2's Markdown section lacks the inherited Xid:\n%s", e2md)
	}
	doc, err := BuildJSON(r, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if x := doc.Experiments[1].Xids; len(x) != 1 || x[0].GPU != 5 || x[0].Xid != 79 || !x[0].Critical || !x[0].Before || x[0].T != 3 {
		t.Errorf("e2's JSON Xids %+v", x)
	}
	if x := doc.Experiments[2].Xids; x != nil {
		t.Errorf("e3's JSON Xids %+v, want none", x)
	}
}
