package compare

import (
	"math"
	"time"

	"github.com/aclements/go-moremath/stats"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// The methods of an across-launch verdict (Verdict.Method).
const (
	// MethodMannWhitney is benchstat's test: the Mann–Whitney U test over
	// one value per launch, with at least MinLaunches launches a side.
	MethodMannWhitney = "mann-whitney-u"
	// MethodKnownNoise is for fewer launches a side when the class's
	// launch-to-launch noise is known (NoiseEstimate): Student's t on the
	// difference of the sides' mean log launch values, the standard
	// deviation pooled over the noise launches, df = Σ(k−1).
	MethodKnownNoise = "student-t-known-noise"
)

// The words of a verdict (Verdict.Word). A metric names its direction
// with two of the first six; the last two decide nothing.
const (
	WordFaster  = "faster"  // tok/s up
	WordSlower  = "slower"  // tok/s down
	WordBetter  = "better"  // a latency down
	WordWorse   = "worse"   // a latency up
	WordLonger  = "longer"  // the EAGLE accept length up
	WordShorter = "shorter" // the EAGLE accept length down
	WordSame    = "no significant difference"
	WordNone    = "no verdict"
)

// Verdict is the across-launch verdict of one result row: one launch is
// one sample. It is the only verdict the views give: the reports, journal
// show and diff, the x panel, the header and the compare view all write
// it with Text (or Short). Within-launch intervals never decide.
type Verdict struct {
	// Word is one of the Word constants.
	Word string
	// Why says what is missing with WordNone: "1+1 launches; A/A noise
	// unknown — R repeats a launch", "no benchmark of e2 (b runs one)".
	Why string
	// Method is MethodMannWhitney or MethodKnownNoise; "" when no test
	// ran (WordNone).
	Method string
	// DeltaPct is the change of B's launches over A's, percent: of the
	// medians (Mann–Whitney), of the geometric means (known noise);
	// valid when HasDelta.
	DeltaPct float64
	HasDelta bool
	// P is the test's two-sided p-value; 1 when none ran.
	P float64
	// N1 and N2 are the launches with a value on each side.
	N1, N2 int
	// Noise is the A/A noise MethodKnownNoise assumed; nil otherwise.
	Noise *NoiseEstimate
	// NoiseAge is how long before B's start the newest noise launch's
	// experiment started (negative: after it).
	NoiseAge time.Duration
	// AcrossSessions says A and B are experiments of two sessions (one of
	// an earlier journal, "2026-12-01-101500-demo:e3"): the noise was
	// measured launch to launch, so a drift between the sessions (a
	// reboot, the clocks, another tenant) is not in it, and Text says so.
	AcrossSessions bool
}

// Decided reports whether the verdict found a difference: a direction
// word, not WordSame or WordNone.
func (v Verdict) Decided() bool { return v.Word != WordSame && v.Word != WordNone && v.Word != "" }

// Short is the verdict in a word or a phrase: "slower", "no significant
// difference", "no verdict: 1+1 launches; A/A noise unknown — R repeats a
// launch". Sanitised.
func (v Verdict) Short() string {
	if v.Word == WordNone && v.Why != "" {
		return WordNone + ": " + sanitize.OneLine(v.Why)
	}
	return v.Word
}

// Text is the verdict with its numbers and its assumption:
//
//	slower -8.5% across launches (p=0.008 n=5+5)
//	slower -8.1% vs A/A noise sd 0.3% (p<0.001 n=1+1, noise from 5 launches 2 h ago)
//	no significant difference (p=0.310 n=5+5)
//	no verdict: 1+1 launches; A/A noise unknown — R repeats a launch
func (v Verdict) Text() string {
	s := v.Short()
	switch v.Method {
	case MethodMannWhitney:
		if v.Decided() && v.HasDelta {
			s += " " + FormatDelta(v.DeltaPct) + " across launches"
		}
		s += " (" + FormatP(v.P) + " " + FormatN(v.N1, v.N2) + ")"
	case MethodKnownNoise:
		if v.Decided() && v.HasDelta {
			s += " " + FormatDelta(v.DeltaPct)
		}
		s += " vs A/A noise " + FormatSD(v.Noise.SDPct()) + " (" + FormatP(v.P) + " " + FormatN(v.N1, v.N2) +
			", noise from " + FormatLaunches(v.Noise.Launches) + " " + FormatAge(v.NoiseAge)
		if v.AcrossSessions {
			s += "; across sessions: drift not in the noise"
		}
		s += ")"
	}
	return s
}

// NoiseEstimate is the launch-to-launch (A/A) noise of a configuration
// class (ClassKey) for one metric: each configuration of the class with at
// least 2 launches with a value contributes the deviations of the natural
// logs of its launch values from their mean; SD pools them,
// sqrt(Σ dev² / Σ(k−1)), corrected by c4.
type NoiseEstimate struct {
	Metric   string // the result row's metric
	Launches int    // launches pooled (Σk)
	Configs  int    // configurations they ran (ConfigKey)
	DF       int    // degrees of freedom, Σ(k−1)
	// SD is the pooled standard deviation of a launch's log value, a
	// relative noise (0.003 is 0.3 %), corrected for its small-sample
	// bias: sqrt(Σ dev² / DF) / c4(DF), where E[s] = c4·σ for normal
	// values. Without it the test is exact for normal launch values (a
	// false "different" rate of Alpha on A/A data); the correction is a
	// deliberate margin that keeps the rate under Alpha (about 4 % at
	// small DF, approaching 5 % as DF grows). It says nothing about a
	// drift between sessions: see Verdict.AcrossSessions.
	SD float64
	// Latest is the start of the newest experiment that stands for a
	// pooled launch.
	Latest time.Time
	// Exps are the experiments that stand for the pooled launches, their
	// ids as given to Compare (qualified ids of earlier sessions too), in
	// the order given.
	Exps []string
}

// SDPct is SD in percent of a launch's value.
func (n *NoiseEstimate) SDPct() float64 { return n.SD * 100 }

// point is one launch's value of a metric and the experiment it is read
// from.
type point struct {
	v float64
	x *ledger.Experiment
}

// launchPoints is launchValues with the experiment of each value.
func (m *metric) launchPoints(groups [][]*ledger.Experiment) []point {
	var out []point
	for _, g := range groups {
		y := pick(g, nil, m.weight)
		if v, ok := m.launch(y); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, point{v, y})
		}
	}
	return out
}

// estimateNoise pools the launch-to-launch noise of m over every
// configuration of exps whose class is one of classes (A's and B's), each
// configuration's launches grouped as the A/A noise rows group them. nil
// when no configuration has 2 launches with a positive value.
func estimateNoise(m *metric, exps []ledger.Experiment, keys keyCache, classes ...string) *NoiseEstimate {
	return poolNoise(m, exps, keys, func(x *ledger.Experiment) bool {
		c := keys.class(x)
		for _, k := range classes {
			if c != "" && c == k {
				return true
			}
		}
		return false
	})
}

// LaunchNoise is the known launch-to-launch (A/A) noise of metricName
// (MetricLogTokS or MetricBenchTokS) for launches made as l: pooled, as a
// compare's known-noise verdict pools it, over the configurations of
// exps (a host's experiments: its journals', a session's) of l's class
// (LaunchClassKey: the same preset, profile, env and command line, any
// commit) on the GPU host hostname; hostname "" takes each experiment's
// own (exps of one host). nil when no configuration of the class has 2
// launches with a value, or for another metric.
func LaunchNoise(exps []ledger.Experiment, metricName string, l event.LaunchInfo, hostname string) *NoiseEstimate {
	var m *metric
	for i := range metrics {
		if metrics[i].name == metricName && metrics[i].noiseRow {
			m = &metrics[i]
		}
	}
	if m == nil || len(l.Argv) == 0 {
		return nil
	}
	keys := keyCache{}
	classes := map[string]string{} // hostname → class
	return poolNoise(m, exps, keys, func(x *ledger.Experiment) bool {
		h := hostname
		if h == "" {
			h = x.Fingerprint.Hostname // configLaunches keeps only experiments with a fingerprint
		}
		k, ok := classes[h]
		if !ok {
			k = LaunchClassKey(l, h)
			classes[h] = k
		}
		return keys.class(x) == k
	})
}

// poolNoise is estimateNoise over the experiments keep accepts.
func poolNoise(m *metric, exps []ledger.Experiment, keys keyCache, keep func(*ledger.Experiment) bool) *NoiseEstimate {
	order, configs := configLaunches(exps, keys, keep)
	n := &NoiseEstimate{Metric: m.name}
	var ss float64
	for _, k := range order {
		pts := m.launchPoints(configs[k])
		var logs []float64
		var xs []*ledger.Experiment
		for _, p := range pts {
			if p.v > 0 {
				logs, xs = append(logs, math.Log(p.v)), append(xs, p.x)
			}
		}
		if len(logs) < 2 {
			continue
		}
		mean := stats.Mean(logs)
		for _, l := range logs {
			ss += (l - mean) * (l - mean)
		}
		n.Launches += len(logs)
		n.DF += len(logs) - 1
		n.Configs++
		for _, x := range xs {
			n.Exps = append(n.Exps, x.ID)
			if x.Started.After(n.Latest) {
				n.Latest = x.Started
			}
		}
	}
	if n.DF == 0 {
		return nil
	}
	n.SD = math.Sqrt(ss/float64(n.DF)) / c4(n.DF)
	return n
}

// c4 is the bias of the sample standard deviation of normal values with
// df degrees of freedom: E[s] = c4(df)·σ, sqrt(2/df)·Γ((df+1)/2)/Γ(df/2).
func c4(df int) float64 {
	v := float64(df)
	a, _ := math.Lgamma((v + 1) / 2)
	b, _ := math.Lgamma(v / 2)
	return math.Sqrt(2/v) * math.Exp(a-b)
}

// noiseTest is Student's t test of B's launch values lb against A's la,
// assuming the launch-to-launch noise n: t = (mean ln b − mean ln a) /
// (SD · sqrt(1/na + 1/nb)) with n.DF degrees of freedom, two-sided.
// deltaPct is the change of B's geometric mean over A's. ok is false when
// a value is not positive.
func noiseTest(la, lb []float64, n *NoiseEstimate) (deltaPct, p float64, ok bool) {
	meanLog := func(vs []float64) (float64, bool) {
		var s float64
		for _, v := range vs {
			if !(v > 0) {
				return 0, false
			}
			s += math.Log(v)
		}
		return s / float64(len(vs)), len(vs) > 0
	}
	ma, oka := meanLog(la)
	mb, okb := meanLog(lb)
	if !oka || !okb || n == nil || n.DF < 1 || !(n.SD > 0) {
		return 0, 1, false
	}
	diff := mb - ma
	t := diff / (n.SD * math.Sqrt(1/float64(len(la))+1/float64(len(lb))))
	p = 2 * (1 - stats.TDist{V: float64(n.DF)}.CDF(math.Abs(t)))
	return (math.Exp(diff) - 1) * 100, math.Min(math.Max(p, 0), 1), true
}

// directionWord is m's word for a significant change of sign delta.
func (m *metric) directionWord(delta float64) string {
	if delta > 0 {
		return m.up
	}
	return m.down
}
