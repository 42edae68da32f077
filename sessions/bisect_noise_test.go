package sessions

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// noiseExp is one ended launch of a repeat series: preset sim, profile
// prof, at commit head, with a steady tok/s median v from 10 samples, on
// the GPU host gpu-1.
func noiseExp(i int, head, prof string, v float64) ledger.Experiment {
	at := time.Date(2026, 12, 1, 10, 0, i, 0, time.UTC)
	l := &event.LaunchInfo{Preset: "sim", Profile: prof, Argv: []string{"python", "-m", "sglang.launch_server", "--tp", "8", "--port", strconv.Itoa(30000 + i)},
		Env: map[string]string{"NCCL_PROTO": "LL"}, LogPath: "/logs/sim-" + strconv.Itoa(i) + ".log", At: at}
	return ledger.Experiment{ID: "e" + strconv.Itoa(i+1), Started: at, Ended: at.Add(time.Minute), Launch: l,
		Fingerprint: &event.Fingerprint{Hostname: "gpu-1", Launch: l,
			Git: &event.GitState{Repo: "/repo", Head: head, PatchSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
		Result: event.ExperimentResult{N: 10, Median: v},
		Repeat: &event.Repeat{Exp: "e" + strconv.Itoa(i+1), Series: "e1", I: i + 1, N: 5}}
}

// TestBisectKnownNoise: the A/A noise a bisect takes is the pooled log
// SD of the earlier launches of its launch's configuration class (any
// commit, any port), when they are at least BisectNoiseMinLaunches; a
// series of another profile is not its noise; the latency metrics take
// none.
func TestBisectKnownNoise(t *testing.T) {
	a := []float64{88.6, 89.0, 89.5}
	b := []float64{81.9, 82.4}
	var series []ledger.Experiment
	for i, v := range a {
		series = append(series, noiseExp(i, "aaaa", "nccl-ll-ring", v))
	}
	for i, v := range b {
		series = append(series, noiseExp(len(a)+i, "bbbb", "nccl-ll-ring", v))
	}
	// The pooled log SD over the two commits, c4-corrected (df 3).
	var ss float64
	for _, g := range [][]float64{a, b} {
		var m float64
		for _, v := range g {
			m += math.Log(v) / float64(len(g))
		}
		for _, v := range g {
			ss += (math.Log(v) - m) * (math.Log(v) - m)
		}
	}
	c4df3 := math.Sqrt(2.0/3) * math.Gamma(2) / math.Gamma(1.5) // E[s] = c4·σ
	want := math.Sqrt(ss/3) / c4df3
	bisectLaunch := *series[0].Launch
	bisectLaunch.Argv = append([]string(nil), bisectLaunch.Argv...)
	bisectLaunch.Argv[len(bisectLaunch.Argv)-1] = "31999" // another port: the same configuration

	other := bisectLaunch
	other.Profile = "none"
	for _, c := range []struct {
		name     string
		exps     []ledger.Experiment
		metric   string
		launch   event.LaunchInfo
		want     float64 // 0: none
		launches int
	}{
		{"five launches of the class", series, MetricLogTokS, bisectLaunch, want, 5},
		{"four are too few", series[1:], MetricLogTokS, bisectLaunch, 0, 0},
		{"another profile's series", series, MetricLogTokS, other, 0, 0},
		{"a latency metric", series, MetricTTFT, bisectLaunch, 0, 0},
		{"benchmark tok/s without benchmarks", series, MetricBenchTokS, bisectLaunch, 0, 0},
	} {
		n := knownNoise(c.exps, c.metric, c.launch)
		switch {
		case c.want == 0 && n != nil:
			t.Errorf("%s: noise %+v, want none", c.name, n)
		case c.want > 0 && (n == nil || math.Abs(n.SD-c.want) > 1e-12 || n.Launches != c.launches || n.Configs != 2):
			t.Errorf("%s: noise %+v, want sd %v from %d launches of 2 configurations", c.name, n, c.want, c.launches)
		}
	}
}

// TestBisectDriverTakesKnownNoise: a bisect with Method.Noise 0 journals
// the host's known noise of its launch (and how many launches it stands
// on) in its bisect-start, one with NoKnownNoise or a given noise does
// not take it.
func TestBisectDriverTakesKnownNoise(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	br := newBisectRig(t, ctx)
	plan, err := br.b.Control.Plan(br.b.Control.Request())
	if err != nil {
		t.Fatal(err)
	}
	var series []ledger.Experiment
	for i, v := range []float64{88.6, 89.0, 89.5, 88.8, 89.2} {
		x := noiseExp(i, "aaaa", "", v)
		x.Launch, x.Fingerprint.Launch = planInfo(plan), planInfo(plan)
		x.Launch.LogPath, x.Launch.At = "/logs/"+x.ID+".log", x.Started
		series = append(series, x)
	}
	br.b.Experiments = func() []ledger.Experiment { return series }
	want := knownNoise(series, MetricLogTokS, *planInfo(plan))
	if want == nil {
		t.Fatal("the series has no noise")
	}
	br.b.decide = scripted(nil, 4)
	for i, c := range []struct {
		name         string
		cfg          func(*BisectConfig)
		noise        float64
		fromLaunches int
	}{
		{"known", func(*BisectConfig) {}, want.SD, 5},
		{"--no-known-noise", func(c *BisectConfig) { c.NoKnownNoise = true }, 0, 0},
		{"--noise 1", func(c *BisectConfig) { c.Method.Noise = 0.01 }, 0.01, 0},
	} {
		cfg := bisectCfg()
		c.cfg(&cfg)
		if _, err := br.b.Run(ctx, cfg); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		starts := of[event.BisectStart](br.rec.snapshot())
		if len(starts) != i+1 {
			t.Fatalf("%s: %d bisect-starts", c.name, len(starts))
		}
		if s := starts[i]; s.Noise != c.noise || s.NoiseLaunches != c.fromLaunches {
			t.Errorf("%s: bisect-start noise %v from %d launches, want %v from %d", c.name, s.Noise, s.NoiseLaunches, c.noise, c.fromLaunches)
		}
	}
}
