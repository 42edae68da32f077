package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

const (
	headA = "a6d51c0e9f1b2c3d4e5f60718293a4b5c6d7e8f9"
	headB = "32074270aabbccddeeff00112233445566778899"
)

// t0 is when the simulated host's experiments start.
var t0 = time.Date(2026, 11, 29, 21, 58, 7, 123456789, time.UTC)

func ok(v float64) event.Reading { return event.Reading{Value: v} }

// profiles are the simulated host's env profiles.
var profiles = map[string]map[string]string{
	"baseline":     {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
	"nccl-ll-ring": {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"},
}

// dexp is an experiment as the simulated host records it: launched (its
// own launch, with its own log) with a profile at a commit, measured at
// about tok tok/s.
func dexp(id, profile, head string, tok float64) ledger.Experiment {
	l := &event.LaunchInfo{Preset: "sim", Profile: profile, Server: "sglang", LogPath: "/var/log/flightdeck/sim-" + id + ".log", At: t0,
		Argv: []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/llama", "--tp-size", "8", "--port", "30000", "--api-key", "sk-1"},
		Env:  profiles[profile]}
	rl := server.RedactLaunch(*l)
	samples := []float64{tok - 0.4, tok + 0.2, tok - 0.1, tok + 0.3, tok, tok + 0.1, tok - 0.2}
	sum := ledger.ResultOf(samples, 3, nil)
	g := eventtest.GPU(0, 0)
	g2 := eventtest.GPU(1, 0)
	return ledger.Experiment{ID: id, Name: profile + " @ " + head[:7], StartedBy: event.TriggerLaunch, EndedBy: event.TriggerRelaunch,
		Started: t0, Ended: t0.Add(time.Minute), Launch: &rl,
		Fingerprint: &event.Fingerprint{Hostname: "gpu-box", Kernel: "6.8.0-45-generic", Launch: &rl, CommandLine: server.CommandLine(rl),
			Git:      &event.GitState{Repo: "/srv/sglang", Head: head, Branch: "main", Subject: "subject of " + head[:7]},
			Versions: []event.Version{{Name: "driver", Value: "590.48.01"}, {Name: "torch", Value: "2.9.1"}, {Name: "sglang", Value: "0.5.6"}}},
		Result:  sum,
		EndGPUs: []event.GPU{g, g2},
	}
}

// benchConfig is the settings of withBench's runs.
var benchConfig = event.BenchConfig{Endpoint: event.BenchCompletions, InputLen: 128, OutputLen: 128, Concurrency: 1, Requests: 4, Warmup: 1, Seed: 1}

func withBench(x ledger.Experiment, tok, ttft float64) ledger.Experiment {
	r := &event.BenchResult{Config: benchConfig, Completed: 4, OutputTokPerSec: tok, TTFT: event.Dist{N: 4, Median: ttft}, ITL: event.Dist{N: 100, Median: 16},
		TPOT: event.Dist{N: 4, Median: 16.1}, E2E: event.Dist{N: 4, Median: 2000}}
	for i := range 4 {
		r.Requests = append(r.Requests, event.BenchRequest{TTFT: ttft + float64(i), E2E: 2000 + float64(i), TPOT: 16 + float64(i)/10, ITLMedian: 16, OutputTokens: 128})
	}
	r.Requests = append(r.Requests, event.BenchRequest{E2E: 5, Err: "HTTP 503"}) // failed: left out
	x.Bench = []event.BenchDone{{ID: "b1", Exp: x.ID, Result: r}, {ID: "b2", Exp: x.ID, Err: "connection refused"}}
	return x
}

// goldenDiff is a comparison with every section: a profile and a commit
// change with its range, a failed capture, a benchmark, 5 launches of A's
// configuration.
func goldenDiff(t *testing.T) *compare.Diff {
	var exps []ledger.Experiment
	for i, tok := range []float64{62.1, 62.9, 62.5, 61.8, 62.4} {
		x := dexp("e"+string(rune('1'+i)), "baseline", headA, tok)
		if i == 0 {
			x = withBench(x, 61.9, 41.2)
		}
		exps = append(exps, x)
	}
	exps[0].Repeat = nil
	exps[1].Repeat = &event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 5}
	b := withBench(dexp("e6", "nccl-ll-ring", headB, 57.5), 57.1, 45.9)
	b.Name = "regress \x1b[31m@ 3207427"
	b.Fingerprint.Git.Range = &event.CommitRange{From: headA, To: headB, Ahead: []string{"3207427 Regress decode", "1111111 Refactor attention"}, AheadTotal: 60,
		Files: []string{"python/sglang/srt/layers/attention.py"}, FilesTotal: 1}
	b.Fingerprint.Versions[1] = event.Version{Name: "torch", Err: "timed out after 10s"}
	b.EndGPUs[1].SMClockMHz = event.Reading{Value: 1410}
	b.EndGPUs[1].ClockEvents = event.ClockEvents{Mask: event.ReasonHWThermalSlowdown}
	exps = append(exps, b)
	d, err := compare.Compare(exps, "e1", "e6")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestWriteDiffTextGolden pins the terminal form (-update-report rewrites
// testdata/diff.txt and diff-all.txt).
func TestWriteDiffTextGolden(t *testing.T) {
	d := goldenDiff(t)
	for _, tc := range []struct {
		file string
		opts DiffOptions
	}{{"diff.txt", DiffOptions{}}, {"diff-all.txt", DiffOptions{All: true}}} {
		var buf bytes.Buffer
		if err := WriteDiffText(&buf, d, tc.opts); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, buf.Bytes())
		if bytes.Contains(buf.Bytes(), []byte("\x1b")) {
			t.Errorf("%s: an escape sequence reached the output", tc.file)
		}
	}
}

// TestWriteDiffMarkdownGolden pins the Markdown form.
func TestWriteDiffMarkdownGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteDiff(&buf, goldenDiff(t), "md", DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff.md", buf.Bytes())
}

// TestWriteDiffJSON: the JSON form decodes, folds unchanged rows unless
// asked, and carries the verdicts, the range and the noise.
func TestWriteDiffJSON(t *testing.T) {
	d := goldenDiff(t)
	for _, all := range []bool{false, true} {
		var buf bytes.Buffer
		if err := WriteDiff(&buf, d, "json", DiffOptions{All: all}); err != nil {
			t.Fatal(err)
		}
		var j JSONDiff
		if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
			t.Fatalf("%v\n%s", err, buf.Bytes())
		}
		if j.Version != DiffJSONVersion || j.A.ID != "e1" || j.B.ID != "e6" || len(j.LaunchesA) != 5 || len(j.Results) != 6 {
			t.Errorf("header %+v", j)
		}
		if all != (j.Folded == 0) || len(j.Fields)+j.Folded != len(d.Fields) {
			t.Errorf("all=%v: %d rows, %d folded of %d", all, len(j.Fields), j.Folded, len(d.Fields))
		}
		r := j.Results[0]
		if r.Metric != compare.MetricLogTokS || r.DeltaPct == nil || r.NoisePct == nil || r.Launches.N1 != 5 || r.Launches.N2 != 1 || r.A.Lo == nil {
			t.Errorf("server-log row %+v", r)
		}
		if j.Range == nil || j.Range.FromShort != "a6d51c0" || j.Range.AheadTotal != 60 || len(j.Noise) != 1 {
			t.Errorf("range %+v, noise %+v", j.Range, j.Noise)
		}
		if bytes.Contains(buf.Bytes(), []byte(`\u001b`)) {
			t.Error("an escape sequence reached the JSON")
		}
	}
	if err := WriteDiff(io.Discard, d, "xml", DiffOptions{}); err == nil || !strings.Contains(err.Error(), "text, md, json") {
		t.Errorf("unknown format: %v", err)
	}
}

// TestFormatMetricITL: the ITL row (compare's TestCompareITLPerRequest)
// is written with its unit.
func TestFormatMetricITL(t *testing.T) {
	r := &compare.ResultRow{Metric: compare.MetricITL, Unit: "ms"}
	if got := FormatMetric(r); got != "ITL median per request (ms)" {
		t.Errorf("metric %q", got)
	}
}
