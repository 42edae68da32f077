package report

import (
	"slices"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// VerdictLegend says, under a table of values and verdicts, what decides
// and what does not: the intervals are within-launch spread, the verdict
// is across launches.
const VerdictLegend = "Values are the median and its 95 % interval [lo, hi] over one launch's samples: within-launch spread, which never decides. " +
	"The verdict is across launches, one launch one sample: the Mann–Whitney U test with at least 4 launches a side (α = 0.05); " +
	"with fewer, Student's t against the A/A noise of the configuration class (same host, preset, env profile, env and launch command) when repeats measured it; " +
	"else no verdict."

// JSONVerdict is a compare.Verdict, the across-launch verdict of a result
// row, as the JSON exports give it.
type JSONVerdict struct {
	// Word is "faster", "slower", "better", "worse", "longer", "shorter",
	// "no significant difference" or "no verdict".
	Word string `json:"word"`
	// Why says what is missing for "no verdict"; absent otherwise.
	Why string `json:"why,omitempty"`
	// Text is the verdict as the views write it (compare.Verdict.Text).
	Text string `json:"text"`
	// Method is "mann-whitney-u" or "student-t-known-noise"; absent when
	// no test ran.
	Method string `json:"method,omitempty"`
	// DeltaPct is the change of B's launches over A's, percent (medians
	// for Mann–Whitney, geometric means for the t test); null when none.
	DeltaPct *float64 `json:"delta_pct"`
	// P is the test's two-sided p-value; null when no test ran.
	P     *float64 `json:"p"`
	Alpha float64  `json:"alpha"`
	NA    int      `json:"n_a"` // launches with a value on A's side
	NB    int      `json:"n_b"`
	// Noise is the A/A noise the t test assumed; absent otherwise.
	Noise *JSONNoiseEstimate `json:"noise,omitempty"`
}

// JSONNoiseEstimate is a compare.NoiseEstimate.
type JSONNoiseEstimate struct {
	Launches int     `json:"launches"`
	Configs  int     `json:"configs"`
	DF       int     `json:"df"`
	SDPct    float64 `json:"sd_pct"` // a launch's standard deviation, percent of its value
	// Latest is the start of the newest experiment standing for a noise
	// launch; AgeS is how many seconds before B's start (negative: after).
	Latest time.Time `json:"latest"`
	AgeS   float64   `json:"age_s"`
	Exps   []string  `json:"exps"` // the experiments standing for the noise launches (qualified ids of other journals too)
	// AcrossSessions says A and B are of two sessions: a drift between
	// sessions is not in the launch-to-launch noise.
	AcrossSessions bool `json:"across_sessions"`
}

// BuildVerdictJSON is r's verdict for the JSON exports, its text
// sanitised.
func BuildVerdictJSON(r *compare.ResultRow) JSONVerdict {
	v := r.Verdict
	j := JSONVerdict{Word: v.Word, Why: sanitize.OneLine(v.Why), Text: r.VerdictText(), Method: v.Method, Alpha: compare.Alpha, NA: v.N1, NB: v.N2}
	if v.HasDelta {
		d := v.DeltaPct
		j.DeltaPct = &d
	}
	if v.Method != "" {
		p := v.P
		j.P = &p
	}
	if n := v.Noise; n != nil {
		ids := make([]string, len(n.Exps))
		for i, id := range n.Exps {
			ids[i] = sanitize.OneLine(id)
		}
		j.Noise = &JSONNoiseEstimate{Launches: n.Launches, Configs: n.Configs, DF: n.DF, SDPct: n.SDPct(), Latest: n.Latest, AgeS: v.NoiseAge.Seconds(), Exps: ids,
			AcrossSessions: v.AcrossSessions}
	}
	return j
}

// verdictExps are the experiments the verdicts are computed among: the
// journal's, after Earlier (earlier sessions' experiments of the same
// host, which measure A/A noise and commits too).
func (r *Report) verdictExps() []ledger.Experiment {
	own := r.Ledger.Experiments()
	if len(r.Earlier) == 0 {
		return own
	}
	return append(slices.Clone(r.Earlier), own...)
}

// VerdictVs is the server-log tok/s row of x compared with base (A) among
// the report's experiments (compare.Compare): its across-launch verdict
// is the one the report gives. nil when either is nil or has no
// server-log result, or they are the same experiment. It is computed once
// per pair (again when Earlier is set anew).
func (r *Report) VerdictVs(base, x *ledger.Experiment) *compare.ResultRow {
	if base == nil || x == nil || base.ID == x.ID || base.Result.N == 0 || x.Result.N == 0 {
		return nil
	}
	r.verdictMu.Lock()
	defer r.verdictMu.Unlock()
	k := [2]string{base.ID, x.ID}
	if row, ok := r.verdicts[k]; ok && r.verdictsOf == len(r.Earlier) {
		return row
	}
	if r.verdicts == nil || r.verdictsOf != len(r.Earlier) {
		r.verdicts, r.verdictsOf = map[[2]string]*compare.ResultRow{}, len(r.Earlier)
	}
	var row *compare.ResultRow
	if d, err := compare.Compare(r.verdictExps(), base.ID, x.ID); err == nil {
		row = d.Row(compare.MetricLogTokS)
	}
	r.verdicts[k] = row
	return row
}
