package compare

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// HeadC is a third commit of the same class as ledgertest's: where the
// noise launches of these tests run.
const headC = "c0ffee0011223344556677889900aabbccddeeff"

// launchAt is one launch of the simulated host's baseline configuration
// at head, measured at tok tok/s (its launch value), starting at t: an
// experiment of its own with its own log. The result is built directly
// (no samples): the verdicts read the launch value only.
func launchAt(tmpl *ledger.Experiment, id, head string, tok float64, t time.Time) ledger.Experiment {
	x := *tmpl
	l := *tmpl.Launch
	l.LogPath, l.At = "/var/log/flightdeck/sim-"+id+".log", t
	fp := *tmpl.Fingerprint
	g := *fp.Git
	g.Head = head
	fp.Git, fp.Launch = &g, &l
	x.ID, x.Launch, x.Fingerprint, x.Started, x.Ended = id, &l, &fp, t, t.Add(time.Minute)
	x.Result = event.ExperimentResult{Metric: "tok/s", N: 20, Median: tok}
	return x
}

// simTemplate is a launch of the simulated host's baseline configuration
// stripped to what the verdict reads (a short command line, no env, no
// GPUs): a draw of the simulations then costs what the verdict costs.
func simTemplate() ledger.Experiment {
	x := ledgertest.Experiment("t", "baseline", ledgertest.HeadA, 89)
	l := *x.Launch
	l.Argv, l.Env = []string{"python3", "-m", "sglang.launch_server", "--tp-size", "8"}, nil
	fp := *x.Fingerprint
	fp.Launch, fp.CommandLine = &l, ""
	x.Launch, x.Fingerprint, x.EndGPUs = &l, &fp, nil
	return x
}

// aaCase is one shape of an A/A simulation: noise launches of configs
// configurations (noise launches each) at another commit, and na and nb
// launches at A's and B's commits, every launch drawn from one
// distribution (no difference).
type aaCase struct {
	name                  string
	configs, noise        int
	na, nb                int
	sdPct, dropPct, wantB float64
}

// simulate draws n comparisons of c with rng and counts the verdicts
// that found a difference, and those that said "slower".
func simulate(t *testing.T, c aaCase, n int, rng *rand.Rand) (different, slower int) {
	t.Helper()
	tmpl := simTemplate()
	t0 := ledgertest.T0
	draw := func(mean float64) float64 { return mean * (1 + rng.NormFloat64()*c.sdPct/100) }
	heads := []string{headC, "d00d0011223344556677889900aabbccddeeff00", "e00e0011223344556677889900aabbccddeeff00"}
	for range n {
		var exps []ledger.Experiment
		k := 0
		add := func(head string, tok float64) {
			exps = append(exps, launchAt(&tmpl, fmt.Sprintf("e%d", k+1), head, tok, t0.Add(time.Duration(k)*time.Minute)))
			k++
		}
		for cfg := range c.configs {
			for range c.noise {
				add(heads[cfg], draw(89))
			}
		}
		for range c.na {
			add(ledgertest.HeadA, draw(89))
		}
		a := fmt.Sprintf("e%d", k)
		for range c.nb {
			add(ledgertest.HeadB, draw(89*(1-c.dropPct/100)))
		}
		b := fmt.Sprintf("e%d", k)
		d, err := Compare(exps, a, b)
		if err != nil {
			t.Fatal(err)
		}
		v := row(t, d, MetricLogTokS).Verdict
		if v.Method != MethodKnownNoise {
			t.Fatalf("%s: method %q (%s), want the known-noise test", c.name, v.Method, v.Text())
		}
		if v.Decided() {
			different++
		}
		if v.Word == WordSlower {
			slower++
		}
	}
	return different, slower
}

// TestKnownNoiseFalseDifferentRate: on A/A data (every launch from one
// distribution) the known-noise verdict says "different" in at most 5 %
// of 20000 seeded draws at α = 0.05, for several shapes of noise source
// and sides.
func TestKnownNoiseFalseDifferentRate(t *testing.T) {
	const draws = 20000
	rng := rand.New(rand.NewPCG(17, 2026))
	for _, c := range []aaCase{
		{name: "1+1, noise from 5 launches of one configuration", configs: 1, noise: 5, na: 1, nb: 1, sdPct: 0.3},
		{name: "1+1, noise from 2 configurations of 3 launches", configs: 2, noise: 3, na: 1, nb: 1, sdPct: 0.3},
		{name: "2+1, noise from 2 launches and A's own", configs: 1, noise: 2, na: 2, nb: 1, sdPct: 1},
		{name: "3+3, the sides' own launches only", configs: 0, na: 3, nb: 3, sdPct: 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := draws
			if testing.Short() || c.configs != 1 {
				n = draws / 4
			}
			diff, _ := simulate(t, c, n, rng)
			rate := float64(diff) / float64(n)
			t.Logf("%s: %d of %d draws different (%.2f%%)", c.name, diff, n, rate*100)
			if rate > Alpha {
				t.Errorf("false different rate %.2f%% > %.0f%%", rate*100, Alpha*100)
			}
		})
	}
}

// TestKnownNoisePower: with A/A noise ±0.3 % known from 5 launches, an
// 8 % drop on one launch a side is "slower" in every draw, and a 3 %
// drop in 95 % of them.
func TestKnownNoisePower(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for _, c := range []aaCase{
		{name: "8% drop", configs: 1, noise: 5, na: 1, nb: 1, sdPct: 0.3, dropPct: 8, wantB: 1},
		{name: "3% drop", configs: 1, noise: 5, na: 1, nb: 1, sdPct: 0.3, dropPct: 3, wantB: 0.95},
	} {
		const n = 2000
		_, slower := simulate(t, c, n, rng)
		if got := float64(slower) / n; got < c.wantB {
			t.Errorf("%s: slower in %.1f%% of draws, want ≥ %.0f%%", c.name, got*100, c.wantB*100)
		}
	}
}

// TestKnownNoiseExample is the bisect step of the issue: 89.4 and 82.1
// tok/s on one launch each, the class's noise known from a repeat of 5
// launches (another session's, its experiments named with qualified ids)
// 2 hours before B.
func TestKnownNoiseExample(t *testing.T) {
	tmpl := ledgertest.Experiment("t", "baseline", ledgertest.HeadA, 89)
	t0 := ledgertest.T0
	var exps []ledger.Experiment
	for i, v := range []float64{89.1, 89.6, 89.3, 88.9, 89.4} {
		exps = append(exps, launchAt(&tmpl, fmt.Sprintf("2026-11-29-215807-demo:e%d", i+1), headC, v, t0.Add(time.Duration(i)*time.Minute)))
	}
	exps = append(exps, launchAt(&tmpl, "e1", ledgertest.HeadA, 89.4, t0.Add(2*time.Hour)),
		launchAt(&tmpl, "e2", ledgertest.HeadB, 82.1, t0.Add(2*time.Hour+4*time.Minute+10*time.Second)))
	d, err := Compare(exps, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, d, MetricLogTokS)
	want := "slower -8.2% vs A/A noise sd 0.3% (p<0.001 n=1+1, noise from 5 launches 2 h ago)"
	if got := r.VerdictText(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if n := r.Verdict.Noise; n == nil || n.DF != 4 || n.Exps[0] != "2026-11-29-215807-demo:e1" || !n.Latest.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("noise %+v", n)
	}
	if r.Verdict.AcrossSessions {
		t.Error("A and B of one session: not across sessions")
	}
	// A of the earlier session, B of this one: the noise is launch to
	// launch, and the words say the drift between sessions is not in it.
	d, err = Compare(exps, "2026-11-29-215807-demo:e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, d, MetricLogTokS); !r.Verdict.AcrossSessions ||
		!strings.HasSuffix(r.VerdictText(), "noise from 5 launches 2 h ago; across sessions: drift not in the noise)") {
		t.Errorf("across sessions: %q %v", r.VerdictText(), r.Verdict.AcrossSessions)
	}
	// Another class (an env profile of its own) is no noise source.
	other := ledgertest.Experiment("x", "nccl-ll-ring", ledgertest.HeadA, 89)
	for i := range exps[:5] {
		exps[i].Launch.Profile = "nccl-ll-ring"
		exps[i].Launch.Env = other.Launch.Env
	}
	d, _ = Compare(exps, "e1", "e2")
	if got := row(t, d, MetricLogTokS).VerdictText(); got != "no verdict: 1+1 launches; A/A noise unknown — R repeats a launch" {
		t.Errorf("noise of another class: %q", got)
	}
}

// TestKnownNoiseZeroIsNoVerdict: launches that read the same value to the
// last bit say nothing about the noise: no verdict rather than an
// infinite t.
func TestKnownNoiseZeroIsNoVerdict(t *testing.T) {
	tmpl := ledgertest.Experiment("t", "baseline", ledgertest.HeadA, 89)
	exps := []ledger.Experiment{
		launchAt(&tmpl, "e1", headC, 89, ledgertest.T0), launchAt(&tmpl, "e2", headC, 89, ledgertest.T0),
		launchAt(&tmpl, "e3", ledgertest.HeadA, 89.2, ledgertest.T0), launchAt(&tmpl, "e4", ledgertest.HeadB, 89.1, ledgertest.T0),
	}
	d, _ := Compare(exps, "e3", "e4")
	if v := row(t, d, MetricLogTokS).Verdict; v.Word != WordNone || !strings.Contains(v.Why, "measured as 0 over 2 launches") {
		t.Errorf("verdict %+v", v)
	}
}

// TestVerdictWords: each kind of verdict in words, as every view writes it.
func TestVerdictWords(t *testing.T) {
	noise := &NoiseEstimate{Launches: 5, DF: 4, SD: 0.003}
	for _, tc := range []struct {
		v           Verdict
		short, text string
	}{
		{Verdict{Word: WordSlower, Method: MethodKnownNoise, DeltaPct: -8.14, HasDelta: true, P: 0.00001, N1: 1, N2: 1, Noise: noise, NoiseAge: 2*time.Hour + 5*time.Minute},
			"slower", "slower -8.1% vs A/A noise sd 0.3% (p<0.001 n=1+1, noise from 5 launches 2 h ago)"},
		{Verdict{Word: WordSame, Method: MethodKnownNoise, DeltaPct: -0.2, HasDelta: true, P: 0.62, N1: 2, N2: 1, Noise: noise, NoiseAge: 30 * time.Second},
			"no significant difference", "no significant difference vs A/A noise sd 0.3% (p=0.620 n=2+1, noise from 5 launches <1 min ago)"},
		{Verdict{Word: WordFaster, Method: MethodKnownNoise, DeltaPct: 42.4, HasDelta: true, P: 0.004, N1: 1, N2: 2, Noise: noise, NoiseAge: -3 * 24 * time.Hour},
			"faster", "faster +42.4% vs A/A noise sd 0.3% (p=0.004 n=1+2, noise from 5 launches 3 d later)"},
		{Verdict{Word: WordSlower, Method: MethodMannWhitney, DeltaPct: -8.5, HasDelta: true, P: 0.008, N1: 5, N2: 5},
			"slower", "slower -8.5% across launches (p=0.008 n=5+5)"},
		{Verdict{Word: WordBetter, Method: MethodMannWhitney, DeltaPct: -12, HasDelta: true, P: 0.016, N1: 5, N2: 4},
			"better", "better -12.0% across launches (p=0.016 n=5+4)"},
		{Verdict{Word: WordShorter, Method: MethodMannWhitney, DeltaPct: -36.2, HasDelta: true, P: 0.008, N1: 5, N2: 5},
			"shorter", "shorter -36.2% across launches (p=0.008 n=5+5)"},
		{Verdict{Word: WordSame, Method: MethodMannWhitney, DeltaPct: 0.3, HasDelta: true, P: 0.31, N1: 5, N2: 5},
			"no significant difference", "no significant difference (p=0.310 n=5+5)"},
		{Verdict{Word: WordNone, Why: "1+1 launches; A/A noise unknown — R repeats a launch", P: 1, N1: 1, N2: 1},
			"no verdict: 1+1 launches; A/A noise unknown — R repeats a launch", "no verdict: 1+1 launches; A/A noise unknown — R repeats a launch"},
		{Verdict{Word: WordNone, Why: "no benchmark of e2 (b runs one)\x1b[31m", P: 1},
			"no verdict: no benchmark of e2 (b runs one)", "no verdict: no benchmark of e2 (b runs one)"},
	} {
		if got := tc.v.Short(); got != tc.short {
			t.Errorf("Short %q, want %q", got, tc.short)
		}
		if got := tc.v.Text(); got != tc.text {
			t.Errorf("Text %q, want %q", got, tc.text)
		}
	}
}

// TestNumberWords: the number formats every view shares.
func TestNumberWords(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{FormatValue(88.44, UnitTokS), "88.4"}, {FormatValue(1446.2, UnitMs), "1446"}, {FormatValue(0.4123, UnitMs), "0.412"},
		{FormatValue(2.314, UnitTokens), "2.31"}, {FormatDelta(-8.04), "-8.0%"}, {FormatDelta(42.44), "+42.4%"},
		{FormatDelta(-0.04), "+0.0%"}, {FormatNoise(0.27), "±0.3%"}, {FormatNoise(0.04), "±0.04%"}, {FormatNoise(0), "±0.0%"}, {FormatSD(0.27), "sd 0.3%"}, {FormatSD(0.043), "sd 0.043%"}, {FormatP(0.0081), "p=0.008"}, {FormatP(0.0002), "p<0.001"},
		{FormatN(1, 1), "n=1+1"}, {FormatLaunches(1), "1 launch"}, {FormatAge(25 * time.Minute), "25 min ago"},
		{FormatSummary(ledger.Summarize([]float64{61.4}), UnitTokS), "61.4 n=1"},
		{FormatSummary(ledger.Summary{}, UnitTokS), "-"},
		{FormatInterval(nil, nil, 4, UnitTokS), "[n<6]"}, {FormatInterval(nil, nil, 9, UnitTokS), "[unbounded]"},
	} {
		if tc.got != tc.want {
			t.Errorf("%q, want %q", tc.got, tc.want)
		}
	}
}
