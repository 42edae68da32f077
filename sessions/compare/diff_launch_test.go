package compare

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// onLaunch puts x on the launch of y's server, as an experiment started
// by hand (e) while y's server runs: no launch of its own, the running
// server's in its fingerprint.
func onLaunch(x ledger.Experiment, y *ledger.Experiment) ledger.Experiment {
	fp := *x.Fingerprint
	fp.Launch = y.Launch
	x.Fingerprint, x.Launch, x.StartedBy = &fp, nil, event.TriggerKey
	return x
}

// TestCompareOneLaunchOneSample: four experiments on one running server
// are one launch, one sample: no verdict, where counting each experiment
// gave "faster (p=0.029 n=4)".
func TestCompareOneLaunchOneSample(t *testing.T) {
	a1, b1 := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.1), ledgertest.Experiment("e5", "nccl-ll-ring", ledgertest.HeadA, 89.2)
	exps := []ledger.Experiment{a1,
		onLaunch(ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62.9), &a1),
		onLaunch(ledgertest.Experiment("e3", "baseline", ledgertest.HeadA, 62.5), &a1),
		onLaunch(ledgertest.Experiment("e4", "baseline", ledgertest.HeadA, 61.8), &a1),
		b1,
		onLaunch(ledgertest.Experiment("e6", "nccl-ll-ring", ledgertest.HeadA, 88.5), &b1),
		onLaunch(ledgertest.Experiment("e7", "nccl-ll-ring", ledgertest.HeadA, 89.9), &b1),
		onLaunch(ledgertest.Experiment("e8", "nccl-ll-ring", ledgertest.HeadA, 88.8), &b1),
	}
	d, err := Compare(exps, "e3", "e6")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.LaunchesA) != 1 || d.LaunchesA[0] != d.A || len(d.LaunchesB) != 1 || d.LaunchesB[0] != d.B {
		t.Errorf("launches A %s, B %s: want the chosen experiments alone", launchList(d.LaunchesA), launchList(d.LaunchesB))
	}
	r := row(t, d, MetricLogTokS)
	if r.Verdict.Short() != "no verdict: 1+1 launches; A/A noise unknown — R repeats a launch" || r.Launches.N1 != 1 || r.Launches.N2 != 1 {
		t.Errorf("verdict %q (%s)", r.Verdict.Short(), r.Launches.PN())
	}
	if r.HasNoise || len(d.Noise) != 0 {
		t.Errorf("A/A noise from one launch: %v, rows %+v", r.Noise, d.Noise)
	}
}

// TestCompareLaunchChoice: each other launch counts once, by its
// experiment with the most steady samples (the bench rows by the one with
// a benchmark); experiments whose launch is not known stay out of every
// group; the noise rows count launches.
func TestCompareLaunchChoice(t *testing.T) {
	var exps []ledger.Experiment
	for i, tok := range []float64{62.1, 62.9, 62.5, 61.8} {
		x := ledgertest.Experiment("a"+string(rune('1'+i)), "baseline", ledgertest.HeadA, tok)
		exps = append(exps, x)
		// A second experiment on the same launch, with fewer samples and
		// a benchmark.
		y := ledgertest.WithBench(onLaunch(ledgertest.Experiment("h"+string(rune('1'+i)), "baseline", ledgertest.HeadA, 70), &x), tok-0.5, 40)
		y.Result = ledger.ResultOf([]float64{70, 70.1, 69.9}, 0, nil)
		exps = append(exps, y)
	}
	// A launch known by its time only (a launch without a log path) is a
	// launch; one known by neither is alone.
	byTime := ledgertest.Experiment("t1", "baseline", ledgertest.HeadA, 62.4)
	tl := *byTime.Launch
	tl.LogPath, tl.At = "", ledgertest.T0.Add(99*time.Second)
	byTime.Launch, byTime.Fingerprint.Launch = &tl, &tl
	unknown := ledgertest.Experiment("u1", "baseline", ledgertest.HeadA, 10)
	l := *unknown.Launch
	unknown.Launch = &event.LaunchInfo{Preset: l.Preset, Profile: l.Profile, Server: l.Server, Argv: l.Argv, Env: l.Env}
	unknown.Fingerprint.Launch = unknown.Launch
	exps = append(exps, byTime, unknown)
	for i, tok := range []float64{89.2, 88.5, 89.9, 88.8} {
		exps = append(exps, ledgertest.WithBench(ledgertest.Experiment("b"+string(rune('1'+i)), "nccl-ll-ring", ledgertest.HeadA, tok), tok-0.5, 30))
	}
	d, err := Compare(exps, "a2", "b1")
	if err != nil {
		t.Fatal(err)
	}
	if got := launchList(d.LaunchesA); got != "a1, a2, a3, a4, t1 (5)" {
		t.Errorf("launches of A: %s", got)
	}
	if r := row(t, d, MetricLogTokS); r.Verdict.Short() != "faster" || r.Launches.PN() != "p=0.016 n=5+4" || r.Launches.A.Median != 62.4 {
		t.Errorf("server-log row: %q (%s), A's launch median %v", r.Verdict.Short(), r.Launches.PN(), r.Launches.A.Median)
	}
	// The bench rows take each launch's benchmarked experiment: A's own
	// launch (a2 has none) has no bench value.
	if r := row(t, d, MetricBenchTokS); r.Launches.N1 != 3 || r.Verdict.Short() != "no verdict: no benchmark of a2 (b runs one)" {
		t.Errorf("bench row: %q (%s)", r.Verdict.Short(), r.Launches.PN())
	}
	d, err = Compare(exps, "u1", "b1")
	if err != nil {
		t.Fatal(err)
	}
	if got := launchList(d.LaunchesA); got != "u1 (1)" {
		t.Errorf("a launch not known: launches %s", got)
	}
	var logNoise *NoiseRow
	for i := range d.Noise {
		if d.Noise[i].Config == "baseline @ a6d51c0" && d.Noise[i].Metric == MetricLogTokS {
			logNoise = &d.Noise[i]
		}
	}
	if logNoise == nil || logNoise.Launches != 5 || logNoise.Lo != 61.8 || logNoise.Hi != 62.9 {
		t.Errorf("noise rows %+v: want 5 launches of baseline, 61.8–62.9 tok/s", d.Noise)
	}
	for _, n := range d.Noise {
		if n.Config == "baseline @ a6d51c0" && n.Metric == MetricBenchTokS && n.Launches != 4 {
			t.Errorf("bench noise over %d launches, want 4", n.Launches)
		}
	}
}

// TestConfigKeyVersions: an upgrade at the same commit is another
// configuration; a failed probe is left out of the key.
func TestConfigKeyVersions(t *testing.T) {
	base := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 1)
	for name, tc := range map[string]struct {
		change func(vs []event.Version) []event.Version
		same   bool
	}{
		"upgrade": {func(vs []event.Version) []event.Version { vs[1].Value = "2.10.0"; return vs }, false},
		"added": {func(vs []event.Version) []event.Version {
			return append(vs, event.Version{Name: "flashinfer", Value: "0.5.2"})
		}, false},
		"failed": {func(vs []event.Version) []event.Version {
			vs[1] = event.Version{Name: "torch", Err: "timed out"}
			return vs
		}, false},
		"order": {func(vs []event.Version) []event.Version { slices.Reverse(vs); return vs }, true},
		"time":  {func(vs []event.Version) []event.Version { vs[0].Millis = 99; return vs }, true},
	} {
		x := ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 2)
		fp := *x.Fingerprint
		fp.Versions = tc.change(slices.Clone(fp.Versions))
		x.Fingerprint = &fp
		if got := ConfigKey(&x) == ConfigKey(&base); got != tc.same {
			t.Errorf("%s: same key %v, want %v", name, got, tc.same)
		}
	}
	// A failed probe and a missing one are alike.
	x, y := ledgertest.Experiment("e3", "baseline", ledgertest.HeadA, 3), ledgertest.Experiment("e4", "baseline", ledgertest.HeadA, 3)
	x.Fingerprint.Versions[1] = event.Version{Name: "torch", Err: "timed out"}
	y.Fingerprint.Versions = slices.Delete(slices.Clone(y.Fingerprint.Versions), 1, 2)
	if ConfigKey(&x) != ConfigKey(&y) {
		t.Error("a failed probe is not left out of the key")
	}
}

// TestCompareITLPerRequest: the ITL row is the per-request ITL median in
// its cells and its launch values alike, never the run's pooled gaps.
func TestCompareITLPerRequest(t *testing.T) {
	a := ledgertest.WithBench(ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62), 61, 40)
	b := ledgertest.WithBench(ledgertest.Experiment("e2", "nccl-ll-ring", ledgertest.HeadA, 89), 88, 30)
	for _, x := range []*ledger.Experiment{&a, &b} {
		r := x.Bench[0].Result
		r.ITL = event.Dist{N: 400, Median: 12}                                                                // pooled over every gap: another statistic
		r.Requests = append(r.Requests, event.BenchRequest{TTFT: 40, E2E: 41, OutputTokens: 1, ITLMedian: 0}) // one chunk: no gap
	}
	d, err := Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, d, MetricITL)
	if r.A.Median != 16 || r.A.N != 4 || r.Launches.A.Median != 16 || r.Launches.B.Median != 16 {
		t.Errorf("ITL row: own %v (n=%d), launch values %v/%v: want 16 (n=4) throughout", r.A.Median, r.A.N, r.Launches.A.Median, r.Launches.B.Median)
	}
	if r.Metric != "ITL median per request" || r.Unit != "ms" { // written "ITL median per request (ms)": report's TestFormatMetricITL
		t.Errorf("metric %q (%s)", r.Metric, r.Unit)
	}
	// A run stored without its requests has no per-request ITL.
	a.Bench[0].Result.Requests = nil
	d, _ = Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if r := row(t, d, MetricITL); r.A.N != 0 || r.Launches.N1 != 0 {
		t.Errorf("ITL from a run without requests: %+v", r)
	}
	if r := row(t, d, MetricTTFT); r.A.N != 1 || r.A.Median != 40 {
		t.Errorf("TTFT from a run without requests: %+v, want its Dist's median", r.A)
	}
}

// TestCompareBenchSettings: runs with other settings measure another
// workload: the bench rows give no verdict and the bench field rows say
// what differs; a side whose own launches disagree is mixed.
func TestCompareBenchSettings(t *testing.T) {
	var exps []ledger.Experiment
	for i, tok := range []float64{62.1, 62.9, 62.5, 61.8} {
		exps = append(exps, ledgertest.WithBench(ledgertest.Experiment("a"+string(rune('1'+i)), "baseline", ledgertest.HeadA, tok), tok-0.5, 40+float64(i)))
	}
	for i, tok := range []float64{89.2, 88.5, 89.9, 88.8} {
		x := ledgertest.WithBench(ledgertest.Experiment("b"+string(rune('1'+i)), "nccl-ll-ring", ledgertest.HeadA, tok), tok-0.5, 30+float64(i))
		r := *x.Bench[0].Result
		r.Config.Concurrency, r.Config.Rate, r.Config.Poisson = 4, 2, true
		x.Bench[0].Result = &r
		exps = append(exps, x)
	}
	d, err := Compare(exps, "a1", "b1")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{MetricBenchTokS, MetricTTFT, MetricITL, MetricTPOT, MetricE2E} {
		if r := row(t, d, m); r.Verdict.Short() != "no verdict: benchmark settings differ (concurrency, rate)" {
			t.Errorf("%s: %q", m, r.Verdict.Short())
		}
	}
	if r := row(t, d, MetricLogTokS); r.Verdict.Short() != "faster" {
		t.Errorf("the server-log row %q: the bench settings do not concern it", r.Verdict.Short())
	}
	var got []string
	for _, f := range d.Fields {
		if f.Group == "bench" && f.Changed {
			got = append(got, f.Name+": "+f.A+" -> "+f.B)
		}
	}
	if want := []string{"concurrency: 1 -> 4", "rate: as fast as possible -> 2 req/s poisson"}; !slices.Equal(got, want) {
		t.Errorf("changed bench rows %q, want %q", got, want)
	}

	// A's own launches disagree: mixed, even against itself.
	exps[2].Bench[0].Result.Config.InputLen = 1024
	d, _ = Compare(exps, "a1", "a2") // A/A: each side alone, so a1 vs a2 agree
	for _, f := range d.Fields {
		if f.Group == "bench" && f.Changed {
			t.Errorf("A/A: bench row %+v", f)
		}
	}
	exps[5].Bench[0].Result.Config = ledgertest.BenchConfig // b2 like A again
	d, _ = Compare(exps, "a1", "b2")
	for _, f := range d.Fields {
		if f.Group == "bench" && f.Name == "input len" && (!f.Changed || f.A != "128 tok, 1024 tok (mixed)" || f.B != "128 tok") {
			t.Errorf("input len row %+v", f)
		}
	}
	if r := row(t, d, MetricBenchTokS); !strings.HasPrefix(r.Verdict.Short(), "no verdict: benchmark settings differ (input len, concurrency, rate)") {
		t.Errorf("mixed: %q", r.Verdict.Short())
	}
}

// TestCompareBenchFailuresOnly: a run with failures is left out; with no
// clean run the verdict says why.
func TestCompareBenchFailuresOnly(t *testing.T) {
	a := ledgertest.WithBench(ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62), 61, 40)
	b := ledgertest.WithBench(ledgertest.Experiment("e2", "nccl-ll-ring", ledgertest.HeadA, 89), 88, 30)
	b.Bench[0].Result.Failed = 3
	d, err := Compare([]ledger.Experiment{a, b}, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, d, MetricBenchTokS); r.Verdict.Short() != "no verdict: e2's benchmark runs had failures or were stopped" || r.B.N != 0 {
		t.Errorf("bench row %q, B %+v", r.Verdict.Short(), r.B)
	}
	for _, f := range d.Fields {
		if f.Group == "bench" && (f.Changed || !f.Unknown || f.B != "unknown: no clean benchmark run") {
			t.Errorf("bench row %+v", f)
		}
	}
}

// TestVerdictNotSignificantFirst: when the test finds no difference, the
// verdict says so even when A's launch median is 0.
func TestVerdictNotSignificantFirst(t *testing.T) {
	m := &metrics[0]
	d := &Diff{A: &ledger.Experiment{ID: "e1", Result: event.ExperimentResult{N: 5}}, B: &ledger.Experiment{ID: "e2", Result: event.ExperimentResult{N: 5}}}
	row := ResultRow{Launches: Samples([]float64{0, 0, 0, 1}, []float64{0, 1, 0, 0})}
	if got := verdict(m, d, &row, []float64{0, 0, 0, 1}, []float64{0, 1, 0, 0}, nil).Short(); got != "no significant difference" {
		t.Errorf("verdict %q", got)
	}
}

// TestCompareLaunchIdentity: a launch is its log path and time: a log
// path used again later is another launch; a launch known without its
// time (adopted from the server's status) is the one with its log path.
func TestCompareLaunchIdentity(t *testing.T) {
	x1, x2 := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62), ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 63)
	l2 := *x2.Launch
	l2.LogPath, l2.At = x1.Launch.LogPath, ledgertest.T0.Add(time.Minute)
	x2.Launch, x2.Fingerprint.Launch = &l2, &l2
	x3 := ledgertest.Experiment("e3", "baseline", ledgertest.HeadA, 70)
	adopted := *x1.Launch
	adopted.At = time.Time{}
	x3 = onLaunch(x3, &ledger.Experiment{Launch: &adopted})
	b := ledgertest.Experiment("e4", "nccl-ll-ring", ledgertest.HeadA, 89)
	d, err := Compare([]ledger.Experiment{x1, x2, x3, b}, "e1", "e4")
	if err != nil {
		t.Fatal(err)
	}
	if got := launchList(d.LaunchesA); got != "e1, e2 (2)" {
		t.Errorf("launches %s, want e1 and e2 (e3 on e1's launch)", got)
	}
	if len(d.Noise) != 1 || d.Noise[0].Launches != 2 || d.Noise[0].Hi != 63 {
		t.Errorf("noise %+v", d.Noise)
	}
}

// TestCompareSameConfigAndOneSidedBench: two launches of one configuration
// are an A/A comparison (no advice to repeat: the noise rows answer it);
// bench settings rows appear only when both sides ran a clean benchmark.
func TestCompareSameConfigAndOneSidedBench(t *testing.T) {
	exps := []ledger.Experiment{
		ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5),
		ledgertest.WithBench(ledgertest.Experiment("e2", "baseline", ledgertest.HeadA, 62.7), 61, 50),
		ledgertest.Experiment("e3", "nccl-ll-ring", ledgertest.HeadA, 89),
	}
	d, err := Compare(exps, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if !d.SameConfig {
		t.Error("e1 and e2 are one configuration")
	}
	if v := row(t, d, MetricLogTokS).Verdict.Short(); v != "no verdict: the same configuration (an A/A comparison: its launch-to-launch spread is the A/A noise)" {
		t.Errorf("A/A verdict %q", v)
	}
	d, err = Compare(exps, "e2", "e3")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Fields {
		if f.Group == "bench" {
			t.Errorf("a bench row with one side unbenchmarked: %+v", f)
		}
	}
}

// TestCompareFewLaunchesUseKnownNoise: 3 launches against 6 can reach
// p <= 0.05 with Mann–Whitney, but its rule is MinLaunches a side: the
// Mann–Whitney test decides nothing (not significant, not within A/A
// noise); the sides' own launches are the A/A noise of their class, and
// the verdict is Student's t against it, saying so.
func TestCompareFewLaunchesUseKnownNoise(t *testing.T) {
	var exps []ledger.Experiment
	for i := range 3 {
		exps = append(exps, ledgertest.Experiment(fmt.Sprintf("a%d", i), "baseline", ledgertest.HeadA, 62+float64(i)/10))
	}
	for i := range 6 {
		exps = append(exps, ledgertest.Experiment(fmt.Sprintf("b%d", i), "nccl-ll-ring", ledgertest.HeadA, 62.6+float64(i)/10))
	}
	d, err := Compare(exps, "a0", "b0")
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, d, MetricLogTokS)
	if r.Launches.Significant || r.WithinNoise {
		t.Errorf("3+6: Mann–Whitney significant %v within noise %v (p=%.3f)", r.Launches.Significant, r.WithinNoise, r.Launches.P)
	}
	v := r.Verdict
	if v.Method != MethodKnownNoise || v.Word != WordFaster || v.Noise == nil || v.Noise.Launches != 9 || v.Noise.DF != 7 || v.Noise.Configs != 2 {
		t.Fatalf("3+6: verdict %+v noise %+v", v, v.Noise)
	}
	if got := r.VerdictText(); !strings.HasPrefix(got, "faster +1.2% vs A/A noise sd 0.3% (p<0.001 n=3+6, noise from 9 launches <1 min ago)") {
		t.Errorf("3+6: %q", got)
	}
}

// TestConfigKeyNeedsTheWholeLaunch: an adopted server's launch (no command
// line) is no known configuration; the profile and the host are part of it.
func TestConfigKeyNeedsTheWholeLaunch(t *testing.T) {
	x := ledgertest.Experiment("e1", "baseline", ledgertest.HeadA, 62.5)
	adopted := x
	l := *x.Launch
	l.Argv = nil
	adopted.Launch, adopted.Fingerprint = &l, &event.Fingerprint{Hostname: "gpu-box", Git: x.Fingerprint.Git, Launch: &l}
	if k := ConfigKey(&adopted); k != "" {
		t.Errorf("adopted launch: key %q, want none", k)
	}
	other := x
	fp := *x.Fingerprint
	fp.Hostname = "gpu-box-2"
	other.Fingerprint = &fp
	if ConfigKey(&x) == ConfigKey(&other) {
		t.Error("two hosts, one configuration")
	}
	prof := x
	pl := *x.Launch
	pl.Profile = "tuned-but-same-env"
	prof.Launch = &pl
	pf := *x.Fingerprint
	pf.Launch = &pl
	prof.Fingerprint = &pf
	if ConfigKey(&x) == ConfigKey(&prof) {
		t.Error("two ledgertest.Profiles, one configuration")
	}
}
