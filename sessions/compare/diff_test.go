package compare

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// launchList names a side's launches as the diff's text does: "e1, e4,
// e5 (3)".
func launchList(xs []*ledger.Experiment) string {
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = x.ID
	}
	return strings.Join(ids, ", ") + " (" + strconv.Itoa(len(xs)) + ")"
}

func changedRows(d *Diff) []string {
	var out []string
	for _, f := range d.Fields {
		if f.Changed {
			out = append(out, f.Group+" "+f.Name)
		}
	}
	return out
}

func row(t *testing.T, d *Diff, metric string) *ResultRow {
	t.Helper()
	for i := range d.Results {
		if d.Results[i].Metric == metric {
			return &d.Results[i]
		}
	}
	t.Fatalf("no %s row in %+v", metric, d.Results)
	return nil
}

// TestCompareProfileOnly: only the profile changed, so only env rows
// differ; the result is there, with no verdict from one launch each.
func TestCompareProfileOnly(t *testing.T) {
	exps := []ledger.Experiment{ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "nccl-ll-ring", ledgertest.HeadA, 89)}
	d, err := Compare(exps, "e1", "nccl-ll-ring @ a6d51c0") // a name works too
	if err != nil {
		t.Fatal(err)
	}
	if d.A.ID != "e1" || d.B.ID != "e2" {
		t.Fatalf("compared %s with %s", d.A.ID, d.B.ID)
	}
	want := []string{"env profile", "env NCCL_ALGO", "env NCCL_PROTO"}
	if got := changedRows(d); !slices.Equal(got, want) {
		t.Errorf("changed rows %q, want %q", got, want)
	}
	for _, f := range d.Fields[:3] {
		if !f.Changed {
			t.Errorf("changed rows are not first: %+v", d.Fields)
		}
	}
	for _, f := range d.Fields {
		if f.Unknown {
			t.Errorf("unknown row %+v", f)
		}
		if f.Name == "NCCL_PROTO" && (f.A != "" || f.B != "LL") {
			t.Errorf("NCCL_PROTO row %+v, want added", f)
		}
		if strings.Contains(f.A+f.B, "sk-1") {
			t.Errorf("a secret in row %+v", f)
		}
	}
	r := row(t, d, MetricLogTokS)
	if r.A.Median != 62.5 || r.B.Median != 89 || r.A.N != 7 {
		t.Errorf("medians %v, %v (n=%d)", r.A.Median, r.B.Median, r.A.N)
	}
	if p, ok := r.DeltaPct(); !ok || p < 42.3 || p > 42.5 {
		t.Errorf("delta %v %v", p, ok)
	}
	if r.Verdict.Short() != "no verdict: 1+1 launches; A/A noise unknown — R repeats a launch" {
		t.Errorf("verdict %q", r.Verdict.Short())
	}
	if len(d.Results) != 1 {
		t.Errorf("bench rows without a benchmark: %+v", d.Results)
	}
	if d.Range != nil || d.RangeNote != "same commit" {
		t.Errorf("range %+v, note %q", d.Range, d.RangeNote)
	}
}

// TestCompareHeadMoved: HEAD changed; the range recorded at B's start
// (from A's HEAD) is found, and reversed when comparing the other way.
func TestCompareHeadMoved(t *testing.T) {
	a, b := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "baseline", ledgertest.HeadB, 57.5)
	rg := &event.CommitRange{From: ledgertest.HeadA, To: ledgertest.HeadB, Ahead: []string{"3207427 Regress decode", "1111111 Refactor"}, AheadTotal: 2,
		Files: []string{"python/sglang/srt/layers/attention.py", "python/sglang/srt/utils.py"}, FilesTotal: 2}
	b.Fingerprint.Git.Range = rg
	exps := []ledger.Experiment{a, b}
	d, err := Compare(exps, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if got := changedRows(d); !slices.Equal(got, []string{"commit HEAD"}) {
		t.Errorf("changed rows %q", got)
	}
	if d.Range == nil || d.Range.To != ledgertest.HeadB || len(d.Range.Files) != 2 || d.RangeNote != "recorded at e2's start" {
		t.Errorf("range %+v, note %q", d.Range, d.RangeNote)
	}
	back, err := Compare(exps, "e2", "e1")
	if err != nil {
		t.Fatal(err)
	}
	if back.Range == nil || back.Range.From != ledgertest.HeadB || len(back.Range.Behind) != 2 || len(back.Range.Ahead) != 0 || back.Range.BehindTotal != 2 ||
		back.RangeNote != "recorded at e2's start (reversed)" {
		t.Errorf("reversed range %+v, note %q", back.Range, back.RangeNote)
	}
	if rg.From != ledgertest.HeadA || len(rg.Ahead) != 2 {
		t.Error("Compare changed the recorded range")
	}
	b.Fingerprint.Git.Range = nil
	d, _ = Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if d.Range != nil || !strings.HasPrefix(d.RangeNote, "not recorded: ") {
		t.Errorf("no range recorded: %+v, %q", d.Range, d.RangeNote)
	}
}

// TestCompareUnknownNeverChanged: a capture that failed on one side makes
// its rows unknown, never changed.
func TestCompareUnknownNeverChanged(t *testing.T) {
	a, b := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62.4)
	b.Fingerprint.Versions[1] = event.Version{Name: "torch", Err: "timed out after 10s"}
	b.Fingerprint.Git = nil
	b.Fingerprint.Errors = []string{"git: not a repository"}
	b.Fingerprint.Kernel = ""
	b.EndGPUs = nil
	d, err := Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if got := changedRows(d); len(got) != 0 {
		t.Errorf("changed rows %q", got)
	}
	var unknown []string
	for _, f := range d.Fields {
		if f.Unknown {
			unknown = append(unknown, f.Group+" "+f.Name)
		}
	}
	want := []string{"commit HEAD", "commit branch", "versions torch", "gpu GPUs under load", "host kernel"}
	if !slices.Equal(unknown, want) {
		t.Errorf("unknown rows %q, want %q", unknown, want)
	}
	for _, f := range d.Fields {
		if f.Name == "torch" && f.B != "unknown: timed out after 10s" {
			t.Errorf("torch row %+v", f)
		}
	}
	if ConfigKey(d.B) != "" {
		t.Error("a configuration without its commit has a key")
	}
	if d.Range != nil || !strings.Contains(d.RangeNote, "commit unknown for e2") {
		t.Errorf("note %q", d.RangeNote)
	}
}

// TestCompareVerdicts: 5 launches of each configuration, well separated:
// significant at p=0.008, faster for tok/s and better for a lower TTFT;
// the A/A noise of A's configuration is given.
func TestCompareVerdicts(t *testing.T) {
	var exps []ledger.Experiment
	for i, tok := range []float64{62.1, 62.9, 62.5, 61.8, 62.4} {
		exps = append(exps, ledgertest.WithBench(ledgertest.Experiment("a"+string(rune('1'+i)), "baseline", ledgertest.HeadA, tok), tok-0.5, 40+float64(i)))
	}
	for i, tok := range []float64{89.2, 88.5, 89.9, 88.8, 89.4} {
		exps = append(exps, ledgertest.WithBench(ledgertest.Experiment("b"+string(rune('1'+i)), "nccl-ll-ring", ledgertest.HeadA, tok), tok-0.5, 30+float64(i)))
	}
	d, err := Compare(exps, "a3", "b2")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.LaunchesA) != 5 || len(d.LaunchesB) != 5 {
		t.Fatalf("launches %d+%d", len(d.LaunchesA), len(d.LaunchesB))
	}
	for _, tc := range []struct{ metric, verdict, pn string }{
		{MetricLogTokS, "faster", "p=0.008 n=5"},
		{MetricBenchTokS, "faster", "p=0.008 n=5"},
		{MetricTTFT, "better", "p=0.008 n=5"},
		{MetricITL, "no significant difference", "p=1.000 n=5"},
		{MetricE2E, "no significant difference", "p=1.000 n=5"},
	} {
		r := row(t, d, tc.metric)
		if r.Verdict.Short() != tc.verdict || r.Launches.PN() != tc.pn {
			t.Errorf("%s: %q (%s), want %q (%s)", tc.metric, r.Verdict.Short(), r.Launches.PN(), tc.verdict, tc.pn)
		}
	}
	r := row(t, d, MetricLogTokS)
	if !r.HasNoise || r.WithinNoise || math.Abs(r.Noise-0.6/62.4*100) > 1e-9 { // median 62.4; 61.8 is farthest
		t.Errorf("noise %v %v within %v", r.Noise, r.HasNoise, r.WithinNoise)
	}
	if r.A.Median != 62.5 || r.A.N != 7 {
		t.Errorf("A's own summary %+v", r.A)
	}
	ttft := row(t, d, MetricTTFT)
	if ttft.A.N != 4 || ttft.A.Median != 43.5 || !ttft.LowerIsBetter || ttft.Unit != "ms" {
		t.Errorf("TTFT within-run summary %+v", ttft)
	}
	if len(d.Noise) != 4 || d.Noise[0].Config != "baseline @ a6d51c0" || d.Noise[0].Launches != 5 || d.Noise[0].Lo != 61.8 || d.Noise[0].Hi != 62.9 ||
		d.Noise[1].Metric != MetricBenchTokS {
		t.Errorf("noise rows %+v", d.Noise)
	}
}

// TestCompareLaunchGrouping: an A/A comparison (same configuration) puts
// each experiment on its own side; launches without a result stay out.
func TestCompareLaunchGrouping(t *testing.T) {
	a1, a2, a3 := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 63), ledgertest.Experiment("e3", "baseline", ledgertest.HeadA, 62.5)
	a3.Result = event.ExperimentResult{} // no samples: not a launch
	b := ledgertest.Experiment("e4", "nccl-ll-ring", ledgertest.HeadA, 89)
	exps := []ledger.Experiment{a1, a2, a3, b}
	d, err := Compare(exps, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.LaunchesA) != 1 || len(d.LaunchesB) != 1 {
		t.Errorf("A/A launches %d+%d", len(d.LaunchesA), len(d.LaunchesB))
	}
	d, _ = Compare(exps, "e3", "e4")
	if ids := launchList(d.LaunchesA); ids != "e1, e2, e3 (3)" {
		t.Errorf("launches of A: %s", ids)
	}
	if r := row(t, d, MetricLogTokS); r.Verdict.Short() != "no verdict: no value for e3" {
		t.Errorf("verdict %q", r.Verdict.Short())
	}
}

func TestCompareUnknownExperiment(t *testing.T) {
	exps := []ledger.Experiment{ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62)}
	for _, args := range [][2]string{{"e9", "e1"}, {"e1", "nope\x1b[31m"}} {
		_, err := Compare(exps, args[0], args[1])
		if !errors.Is(err, ErrNoExperiment) || !strings.Contains(err.Error(), "(have e1, e2)") || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("Compare(%q, %q): %v", args[0], args[1], err)
		}
	}
	if _, err := Compare(nil, "e1", "e2"); err == nil || !strings.Contains(err.Error(), "(have none)") {
		t.Errorf("no experiments: %v", err)
	}
}

func TestConfigKey(t *testing.T) {
	base := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 1)
	same := ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 2)
	if ConfigKey(&base) == "" || ConfigKey(&base) != ConfigKey(&same) {
		t.Error("the same configuration has different keys")
	}
	for name, change := range map[string]func(x *ledger.Experiment){
		"env": func(x *ledger.Experiment) {
			x.Fingerprint.Launch = &event.LaunchInfo{Argv: x.Launch.Argv, Env: ledgertest.Profiles["nccl-ll-ring"]}
		},
		"argv": func(x *ledger.Experiment) {
			x.Fingerprint.Launch = &event.LaunchInfo{Argv: []string{"python3", "--tp-size", "4"}}
		},
		"head": func(x *ledger.Experiment) { x.Fingerprint.Git = &event.GitState{Head: ledgertest.HeadB} },
		"patch": func(x *ledger.Experiment) {
			x.Fingerprint.Git = &event.GitState{Head: ledgertest.HeadA, PatchSHA256: "ab12", PatchBytes: 10}
		},
		"no git": func(x *ledger.Experiment) { x.Fingerprint.Git = nil },
		"no fp":  func(x *ledger.Experiment) { x.Fingerprint = nil; x.Launch = nil },
	} {
		x := ledgertest.Experiment("e3", "baseline", ledgertest.HeadA, 3)
		fp := *x.Fingerprint
		x.Fingerprint = &fp
		change(&x)
		if k := ConfigKey(&x); k == ConfigKey(&base) {
			t.Errorf("%s: same key", name)
		}
	}
}

// TestConfigKeyLeavesOutTheEndpoint: a launch on another port or address
// (the demo picks a free port per start) is the same configuration and
// class; another flag value is not.
func TestConfigKeyLeavesOutTheEndpoint(t *testing.T) {
	base := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 1)
	with := func(argv ...string) *ledger.Experiment {
		x := ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 1)
		fp := *x.Fingerprint
		l := *x.Launch
		l.Argv = argv
		fp.Launch, x.Launch, x.Fingerprint = &l, &l, &fp
		return &x
	}
	argv := slices.Clone(base.Launch.Argv) // ... --port 30000 --api-key sk-1
	i := slices.Index(argv, "--port")
	moved := slices.Clone(argv)
	moved[i+1] = "41234"
	for name, x := range map[string]*ledger.Experiment{
		"another port":    with(moved...),
		"--port=N":        with(slices.Concat(argv[:i], []string{"--port=41234"}, argv[i+2:])...),
		"--host and port": with(slices.Concat(moved, []string{"--host", "0.0.0.0"})...),
	} {
		if ConfigKey(x) != ConfigKey(&base) || ClassKey(x) != ClassKey(&base) {
			t.Errorf("%s: another configuration", name)
		}
	}
	tp := slices.Clone(argv)
	tp[slices.Index(tp, "--tp-size")+1] = "4"
	if x := with(tp...); ConfigKey(x) == ConfigKey(&base) || ClassKey(x) == ClassKey(&base) {
		t.Error("--tp-size 4: the same configuration")
	}
	if got := identityArgv([]string{"srv", "--port", "1", "--host=h", "--tp", "8", "--port"}); !slices.Equal(got, []string{"srv", "--tp", "8"}) {
		t.Errorf("identityArgv = %q", got)
	}
}

func TestParseArgv(t *testing.T) {
	got := parseArgv([]string{"python3", "-m", "sglang.launch_server", "--tp-size", "8", "--enable-x", "--port=30000", "--offset", "-1", "--enable-x", "model.bin"})
	want := []argFlag{{"arg 1", "python3"}, {"-m", "sglang.launch_server"}, {"--tp-size", "8"}, {"--enable-x", "(set)"}, {"--port", "30000"},
		{"--offset", "-1"}, {"--enable-x (2)", "model.bin"}}
	if !slices.Equal(got, want) {
		t.Errorf("parseArgv = %q\nwant %q", got, want)
	}
	if got := parseArgv(nil); got != nil {
		t.Errorf("parseArgv(nil) = %q", got)
	}
}

// TestCompareIdleGPUsAtEnd: GPUs idle in the last sample (the server was
// killed before the end) are not under load: never a change.
func TestCompareIdleGPUsAtEnd(t *testing.T) {
	a, b := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62.4)
	for i := range b.EndGPUs {
		b.EndGPUs[i].SMClockMHz = event.Reading{Value: 345}
		b.EndGPUs[i].ClockEvents = event.ClockEvents{Mask: event.ReasonGPUIdle}
		b.EndGPUs[i].PCIeGenCurrent = event.Reading{Value: 1}
	}
	d, err := Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if got := changedRows(d); len(got) != 0 {
		t.Errorf("changed rows %q", got)
	}
	n := 0
	for _, f := range d.Fields {
		if f.Group == "gpu" && f.Unknown {
			n++
			if f.B != "unknown: idle at the end, not under load" {
				t.Errorf("row %+v", f)
			}
		}
	}
	if n != len(gpuFields) {
		t.Errorf("%d unknown gpu rows, want %d: %+v", n, len(gpuFields), d.Fields)
	}
}

// TestCompareALostGPU: a GPU whose handle failed at one end (recorded as
// event.MissingGPU) is counted and named lost in the GPU count, a change;
// its fields are unknown there, not "absent" against values.
func TestCompareALostGPU(t *testing.T) {
	a, b := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62.4)
	b.EndGPUs = slices.Clone(b.EndGPUs)
	last := len(b.EndGPUs) - 1
	b.EndGPUs[last] = event.MissingGPU(b.EndGPUs[last].Index, &b.EndGPUs[last])
	d, err := Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if got := changedRows(d); !slices.Equal(got, []string{"gpu GPUs under load"}) {
		t.Errorf("changed rows %q, want the GPU count", got)
	}
	for _, f := range d.Fields {
		switch {
		case f.Name == "GPUs under load":
			n := strconv.Itoa(len(a.EndGPUs))
			if f.A != n+"x NVIDIA H200" || f.B != n+"x NVIDIA H200, GPU "+strconv.Itoa(b.EndGPUs[last].Index)+" lost" {
				t.Errorf("count row %+v", f)
			}
		case f.Group == "gpu" && strings.HasPrefix(f.Name, "GPU "+strconv.Itoa(b.EndGPUs[last].Index)+" "):
			if !f.Unknown || f.B != "unknown: GPU lost" {
				t.Errorf("lost GPU's row %+v", f)
			}
		}
	}
}
