package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// A bisect on the demo host with EAGLE-3, as a journal the cockpit could
// have written: a repeat of 3 launches at the good commit a6d51c0 (the A/A
// noise, with accept length 3.1), the pull onto e7b9c70 (the range
// recorded at e4's start: three commits, HEAD a CI change), one launch at
// HEAD (82.1 tok/s, accept 2.0) and one at 1b2c3d4 inside the range that
// measures good.

const (
	agreeGood   = "a6d51c0e9f1b2c3d4e5f60718293a4b5c6d7e8f9"
	agreeHead   = "e7b9c70aabbccddeeff00112233445566778899"
	agreeInside = "1b2c3d4aabbccddeeff00112233445566778899"
)

var agreeRange = &event.CommitRange{From: agreeGood, To: agreeHead, AheadTotal: 3, Ahead: []string{
	"e7b9c70 [CI] Raise the nightly benchmark timeout", "9f8e7d6 Rework pynccl all-reduce", "1b2c3d4 Docs: NCCL profiles"},
	Files: []string{".github/workflows/nightly.yml", "python/sglang/srt/distributed/device_communicators/pynccl.py"}, FilesTotal: 2}

// agreeSession returns the bisect session's header and events in order.
func agreeSession() (event.SessionHeader, []event.Event) {
	h := reportHeader()
	h.Name = "bisect-eagle"
	var (
		es []event.Event
		l  ledger.Ledger
		t  float64
	)
	at := func(s float64) time.Time { return reportStart.Add(time.Duration(s * float64(time.Second))) }
	add := func(p event.Payload) {
		e := event.Event{At: at(t), Data: p}
		es = append(es, e)
		l.Apply(e)
	}
	env := map[string]string{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}
	exp := func(id, head string, tok, accept float64, rng *event.CommitRange, repeat *event.Repeat) {
		li := &event.LaunchInfo{Preset: "sim", Profile: "nccl-ll-ring", Server: "sglang", Env: env, Port: 30000, At: at(t),
			Argv:    []string{"flightdeck", "sim", "server", "--tp", "8", "--speculative-algorithm", "EAGLE3", "--port", "30000"},
			LogPath: "/home/ana/logs/sim-" + id + ".log"}
		add(event.ExperimentStart{ID: id, Name: "eagle @ " + head[:7], Trigger: event.TriggerLaunch, Launch: li})
		if repeat != nil {
			add(*repeat)
		}
		t += 1.5
		add(event.ExperimentFingerprint{Exp: id, Fingerprint: event.Fingerprint{At: at(t), Hostname: "sim-h200", Kernel: "6.8.0-49-generic", Launch: li,
			Git:      &event.GitState{Repo: "/home/ana/sglang", Head: head, Branch: "main", Subject: "subject of " + head[:7], Range: rng},
			Versions: []event.Version{{Name: "sglang", Value: "0.5.5"}}}})
		for i := range 12 {
			t += 2
			v := tok + noise(i)/2
			if i == 0 {
				v = tok * 0.5 // warm-up
			}
			add(event.TokRate{TokPerSec: v, AcceptLength: accept + noise(i+3)/10, HasAccept: true, Ranks: 1})
		}
		t += 2
		add(event.ExperimentEnd{Exp: id, Trigger: event.TriggerRelaunch, Result: l.Provisional()})
		t += 3
	}
	exp("e1", agreeGood, 89.4, 3.1, nil, nil)
	exp("e2", agreeGood, 89.7, 3.14, nil, &event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 3})
	exp("e3", agreeGood, 89.2, 3.07, nil, &event.Repeat{Exp: "e3", Series: "e1", I: 3, N: 3})
	add(event.GitMoved{From: agreeGood, To: agreeHead, FromShort: "a6d51c0", ToShort: "e7b9c70", FromBranch: "main", ToBranch: "main",
		Action: "pull", Forward: 3, Files: agreeRange.Files, FilesTotal: 2, At: at(t)})
	exp("e4", agreeHead, 82.1, 2.0, agreeRange, nil)
	exp("e5", agreeInside, 89.3, 3.1, nil, nil)
	return h, es
}

// agreeReport writes the bisect session as a journal file and reads it
// back.
func agreeReport(t *testing.T) *Report {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bisect.jsonl")
	h, es := agreeSession()
	writeJournalFile(t, path, h, es)
	r, _ := readJournalFile(t, path)
	return r
}

// TestReportAndCompareAgree: the report (Markdown and JSON) and the
// comparison (journal diff's text and JSON) give one verdict for e4
// against the baseline e1, in the same words: Student's t against the A/A
// noise of e1's repeat, since e4 is one launch; the culprit line names the
// two commits after the measured-good 1b2c3d4, not HEAD's subject; the
// accept length is a row of its own.
func TestReportAndCompareAgree(t *testing.T) {
	r := agreeReport(t)
	d, err := compare.Compare(r.Ledger.Experiments(), "e1", "e4")
	if err != nil {
		t.Fatal(err)
	}
	var txt, djs, md, js bytes.Buffer
	if err := WriteDiffText(&txt, d, DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDiffJSON(&djs, d, DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "slower -8.2% vs A/A noise sd 0.3% (p=0.002 n=3+1, noise from 3 launches <1 min ago)"
	row := d.Row(compare.MetricLogTokS)
	if row == nil || row.VerdictText() != want {
		t.Fatalf("compare's verdict %+v, want %q", row, want)
	}
	for name, out := range map[string]string{"diff text": txt.String(), "report md": md.String()} {
		if !strings.Contains(out, want) && !strings.Contains(out, mdText(want)) {
			t.Errorf("%s lacks the verdict %q:\n%s", name, want, out)
		}
	}
	if !strings.Contains(md.String(), "| e4 | eagle @ e7b9c70 | e7b9c70 | nccl-ll-ring | 82.1 [81.8, 82.2] (n=8) | 1.99 | -8.2% | "+mdText(want)+" | relaunch |") {
		t.Errorf("report's row for e4:\n%s", md.String())
	}
	var doc JSONReport
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var dj JSONDiff
	if err := json.Unmarshal(djs.Bytes(), &dj); err != nil {
		t.Fatal(err)
	}
	rv, dv := doc.Experiments[3].Verdict, dj.Results[0].Verdict
	if rv == nil || rv.Text != want || dv.Text != want || rv.Word != "slower" || rv.Method != compare.MethodKnownNoise ||
		rv.NA != 3 || rv.NB != 1 || rv.Noise == nil || rv.Noise.DF != 2 || *rv.P != *dv.P || *rv.DeltaPct != *dv.DeltaPct {
		t.Errorf("JSON verdicts: report %+v, diff %+v", rv, dv)
	}
	culprit := "culprit between 1b2c3d4 (89.3) and e7b9c70 (82.1): 2 commits, unmeasured: 9f8e7d6 Rework pynccl all-reduce"
	if !strings.Contains(txt.String(), "  "+culprit+"\n") || dj.Culprit == nil || dj.Culprit.Text != culprit {
		t.Errorf("culprit: want %q in\n%s", culprit, txt.String())
	}
	if !strings.Contains(txt.String(), "EAGLE accept length (tokens)  3.09 n=1               1.99 n=1               -35.6%  shorter -35.7% vs A/A noise sd 1.3% (p=0.001 n=3+1") {
		t.Errorf("no accept-length row:\n%s", txt.String())
	}
	golden(t, "agree-diff.txt", txt.Bytes())
	golden(t, "agree-diff.json", djs.Bytes())
	golden(t, "agree.md", md.Bytes())
	golden(t, "agree.json", js.Bytes())
}
