package report

import (
	"math"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// The demo's story as a synthetic session (what `flightdeck demo` records
// when a user runs the baseline, then the nccl-ll-ring profile, then pulls
// the regressing commit): e1 62.5 tok/s, e2 89, e3 about 81.9. It is
// written to testdata/report-session.jsonl (go test -run
// TestReportSessionFile -update) and the report goldens are made from
// that file.

var reportStart = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

const (
	baselineHead = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	regressHead  = "9f8e7d6c5b4a39281706f5e4d3c2b1a098f7e6d5"
)

func reportHeader() event.SessionHeader {
	return event.SessionHeader{Format: journal.FormatName, Version: journal.FormatVersion, Created: reportStart, Flightdeck: "v0.5.0-test",
		Host: "root@127.0.0.1:40123", Label: "demo", Name: "regression-hunt", User: "ana", Hostname: "laptop", PID: 4242}
}

// noise is a fixed, irregular sequence in [-0.5, 0.5] whose median is 0
// (no randomness in goldens).
func noise(i int) float64 {
	offsets := []float64{0.3, -0.2, 0.5, -0.4, 0.1, -0.1, 0.4, -0.3, 0.2, -0.5, 0}
	return offsets[i%len(offsets)]
}

// reportSession returns the synthetic session's events in order. Results
// of exp-end come from a Ledger fed the same events (as the Lab does).
func reportSession() (event.SessionHeader, []event.Event) {
	var (
		es   []event.Event
		l    ledger.Ledger
		load bool
	)
	at := func(s float64) time.Time { return reportStart.Add(time.Duration(s * float64(time.Second))) }
	add := func(s float64, p event.Payload) {
		e := event.Event{At: at(s), Data: p}
		es = append(es, e)
		l.Apply(e)
	}
	launch := func(s float64, profile string, env map[string]string) *event.LaunchInfo {
		li := event.LaunchInfo{Preset: "sim", Profile: profile, Server: "sglang",
			Argv:    []string{"flightdeck", "sim", "server", "--model-path", "/shared/kimi-k2.5-int4", "--tp", "8", "--port", "30000", "--api-key", "s3cret"},
			Env:     env,
			Workdir: "/home/ana/sglang", LogPath: "/home/ana/logs/sim-20261129.log", ExitPath: "/home/ana/logs/sim.exit", Port: 30000, At: at(s)}
		add(s, event.ServerLaunched{Record: event.LaunchRecord{PID: 5000 + int(s), PGID: 5000 + int(s), SID: 5000 + int(s), Launch: li}})
		add(s, event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", Preset: "sim", Profile: profile, Since: at(s), LaunchedAt: at(s), Exit: -1})
		return &li
	}
	fingerprint := func(s float64, id, head, subject string, dirty bool, li *event.LaunchInfo) {
		g := &event.GitState{Repo: "/home/ana/sglang", Head: head, Branch: "main", Subject: subject}
		if dirty {
			g.Patch = "diff --git a/python/sglang/srt/distributed/device_communicators/pynccl.py b/python/sglang/srt/distributed/device_communicators/pynccl.py\n" +
				"--- a/python/sglang/srt/distributed/device_communicators/pynccl.py\n+++ b/python/sglang/srt/distributed/device_communicators/pynccl.py\n" +
				"@@ -120,3 +120,4 @@ class PyNcclCommunicator:\n-        self.disabled = False\n+        self.disabled = os.environ.get(\"SGLANG_PYNCCL_OFF\") == \"1\"\n+        # tried: keep NCCL off for small all-reduces\n         self.stream = torch.cuda.Stream()\n"
			g.PatchSHA256 = "5d41402abc4b2a76b9719d911017c592aa4b2e1f0c9d8e7f6a5b4c3d2e1f0a9b"
			g.PatchBytes = 1234
			g.Untracked = []string{"bench.sh"}
		}
		fp := event.Fingerprint{At: at(s), Hostname: "sim-h200", Kernel: "6.8.0-49-generic", Git: g, Launch: li,
			CommandLine: "flightdeck sim server --model-path /shared/kimi-k2.5-int4 --tp 8 --port 30000 --api-key '<redacted>'",
			Versions: []event.Version{
				{Name: "driver", Command: "nvidia-smi --query-gpu=driver_version --format=csv,noheader", Value: "590.48.01", Millis: 120},
				{Name: "cuda", Command: "nvcc --version", Value: "13.0", Millis: 80},
				{Name: "nccl", Command: "python -c 'import torch; print(torch.cuda.nccl.version())'", Err: "timed out after 10s", Millis: 10000},
				{Name: "torch", Command: "python -c 'import torch; print(torch.__version__)'", Value: "2.9.0+cu130", Millis: 900},
				{Name: "sglang", Command: "python -c 'import sglang; print(sglang.__version__)'", Value: "0.5.5", Millis: 1100},
				{Name: "python", Command: "python --version", Value: "3.12.3", Millis: 20},
			},
			GPUs: eventtest.SessionGPUs(false)}
		if id == "e3" {
			fp.Errors = []string{"stash list: exit status 128: fatal: bad revision"}
		}
		add(s, event.ExperimentFingerprint{Exp: id, Fingerprint: fp})
	}
	run := func(from, to float64, median float64) {
		add(from-1, event.ServerStatus{Phase: event.PhaseReady, Server: "sglang", PID: 6000, Since: at(from - 1), Health: "/health", Exit: -1})
		load = true
		i := 0
		for s := from; s <= to; s += 2 {
			v := median + noise(i)
			switch i {
			case 0:
				v = median * 0.55 // warm-up
			case 1:
				v = median * 0.9
			}
			if i == 14 {
				add(s, event.TokRate{TokPerSec: 0.4, Ranks: 1, Dropped: true}) // idle-gap artefact
				add(s+0.5, event.TokRate{TokPerSec: 1.2, Ranks: 1})            // idle trickle
			}
			add(s, event.TokRate{TokPerSec: math.Round(v*100) / 100, Ranks: 1})
			i++
		}
	}
	end := func(s float64, id string, trig event.Trigger, conclusion string) {
		res := l.Provisional()
		add(s, event.ExperimentEnd{Exp: id, Trigger: trig, Conclusion: conclusion, Result: res, GPUs: eventtest.SessionGPUs(load)})
	}

	add(0, event.ConnState{Host: "root@127.0.0.1:40123", Conn: event.Connecting, Since: at(0)})
	add(0.5, event.ConnState{Host: "root@127.0.0.1:40123", Conn: event.Connected, Since: at(0.5)})
	// GPU samples every 10 s, under load while a run is serving.
	for s := 1.0; s < 190; s += 10 {
		busy := s >= 12 && s <= 61 || s >= 74 && s <= 123 || s >= 138 && s <= 187
		add(s, event.GPUSample{At: at(s), GPUs: eventtest.SessionGPUs(busy)})
	}
	// Everything below is put in time order at the end.

	li := launch(2, "none", nil)
	add(2, event.ExperimentStart{ID: "e1", Name: "none @ 1a2b3c4", Trigger: event.TriggerLaunch, Launch: li})
	fingerprint(3.5, "e1", baselineHead, "Bump flashinfer to 0.5.2", false, li)
	run(13, 61, 62.5)
	add(30.25, event.Note{Text: "baseline flat at 62.5; GPUs at P0, no throttling", Exp: "e1"})

	li = launch(64, "nccl-ll-ring", map[string]string{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_MIN_NCHANNELS": "16", "HF_TOKEN": "<redacted>"})
	end(64, "e1", event.TriggerRelaunch, "")
	add(64, event.ExperimentStart{ID: "e2", Name: "nccl-ll-ring @ 1a2b3c4", Hypothesis: "LL protocol on a ring cuts all-reduce latency: expect > 80 tok/s", Trigger: event.TriggerLaunch, Launch: li})
	add(66, event.ExperimentUpdate{Exp: "e1", Conclusion: "the untuned baseline"})
	fingerprint(65.5, "e2", baselineHead, "Bump flashinfer to 0.5.2", false, li)
	run(75, 123, 89)
	add(100.5, event.Note{Text: "89 with NCCL_PROTO=LL, as in the seeds | keep it", Exp: "e2"})

	add(124.5, event.GitMoved{From: baselineHead, To: regressHead, FromShort: "1a2b3c4", ToShort: "9f8e7d6", FromBranch: "main", ToBranch: "main",
		Action: "pull", Forward: 3, Files: []string{".github/workflows/nightly.yml", "python/sglang/srt/distributed/device_communicators/pynccl.py",
			"python/sglang/srt/distributed/parallel_state.py", "python/sglang/srt/managers/scheduler.py", "python/sglang/srt/layers/moe/ep_moe.py"},
		FilesTotal: 5, At: at(124.5)})
	add(124, event.Note{Text: "git pull (fast-forward to origin/main)\x1b]52;c;ZXZpbA==\x07 -- nobody *recorded* this before"})
	li = launch(127, "nccl-ll-ring", map[string]string{"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL", "NCCL_MIN_NCHANNELS": "16", "HF_TOKEN": "<redacted>"})
	end(127, "e2", event.TriggerRelaunch, "+42% over the baseline: keep the profile")
	add(127, event.ExperimentStart{ID: "e3", Name: "nccl-ll-ring @ 9f8e7d6", Hypothesis: "same speed after the pull", Trigger: event.TriggerLaunch, Launch: li})
	fingerprint(128.5, "e3", regressHead, "Fix PCG MoE Error", true, li)
	run(139, 187, 81.9)
	add(150.75, event.Note{Text: "8% slower after the pull: `pynccl.py` changed in 9f8e7d6", Exp: "e3"})
	end(189, "e3", event.TriggerQuit, "the regression is 9f8e7d6 \"Fix PCG MoE Error\"")
	sortEvents(es)
	return reportHeader(), es
}

// sortEvents orders events by time, keeping the order of equal times.
func sortEvents(es []event.Event) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].At.Before(es[j-1].At); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

// writeJournalFile writes evs to a new journal at path with header h.
func writeJournalFile(t testing.TB, path string, h event.SessionHeader, evs []event.Event) {
	t.Helper()
	w, err := journal.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatalf("write %s: %v", e.Data.Kind(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// readJournalFile opens the journal at path (closed when the test ends),
// checks it reads without problems, and folds it into a finished Report.
func readJournalFile(t testing.TB, path string) (*Report, *journal.Journal) {
	t.Helper()
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if j.Problems().Any() {
		t.Fatalf("problems: %v", j.Problems())
	}
	r, err := ReadReport(j.Header(), j.Scan, false)
	if err != nil {
		t.Fatal(err)
	}
	return r, j
}

func f64(v float64) *float64 { return &v }
