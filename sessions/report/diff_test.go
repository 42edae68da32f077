package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// goldenDiff is a comparison with every section: a profile and a commit
// change with its range, a failed capture, a benchmark, 5 launches of A's
// configuration.
func goldenDiff(t *testing.T) *compare.Diff {
	var exps []ledger.Experiment
	for i, tok := range []float64{62.1, 62.9, 62.5, 61.8, 62.4} {
		x := ledgertest.Experiment("e"+string(rune('1'+i)), "baseline", ledgertest.HeadA, tok)
		if i == 0 {
			x = ledgertest.WithBench(x, 61.9, 41.2)
		}
		exps = append(exps, x)
	}
	exps[0].Repeat = nil
	exps[1].Repeat = &event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 5}
	b := ledgertest.WithBench(ledgertest.Experiment("e6", "nccl-ll-ring", ledgertest.HeadB, 57.5), 57.1, 45.9)
	b.Name = "regress \x1b[31m@ 3207427"
	b.Fingerprint.Git.Range = &event.CommitRange{From: ledgertest.HeadA, To: ledgertest.HeadB, Ahead: []string{"3207427 Regress decode", "1111111 Refactor attention"}, AheadTotal: 60,
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
