package bisect

import (
	"math"

	"github.com/aclements/go-moremath/stats"
)

// The statistics of the decision procedure. Every value is a launch's
// sample (its steady-state median of the metric); the tests work on
// natural logs, so a difference is a ratio and the noise a relative one.
//
// The endpoints. Good and bad start with max(Launches, 3) launches each,
// then the side with fewer launches gets one more (good on a tie) until
// they differ or both have the cap. Each state (ng, nb) with both at the
// start count or more is one look at the data; there are at most
// L = 2·(cap − start) + 1 looks, and each look tests at Alpha/L
// (Bonferroni), so the chance that identical endpoints are ever called
// different is at most Alpha over the whole sequence, not Alpha per look.
// The test is the two-sided Mann–Whitney U test (go-moremath, exact
// without ties up to 50 a side; its p floored at 2/C(ng+nb, ng), which
// it can fall below with ties) when the host's noise is unknown: it
// assumes nothing of the distribution, and it cannot reach Alpha/L before
// about 7+7 launches (its smallest p at n+n is 2/C(2n, n)). With a known
// noise (Config.Noise, from the host's A/A repeats) it is Student's t on
// the mean logs with σ = max(Noise, the pooled SD of the two samples),
// df = ng+nb−2: never more liberal than plain Student's t (σ only grows),
// and it decides from 3+3 launches when the gap is several σ. A
// significant difference in the wrong direction (bad better than good)
// ends the bisect: there is no regression to find.
//
// The candidates. σ is the endpoints' pooled SD of log values (df from
// them), max'ed with Noise when known (never below 1e-6), g and b the
// endpoints' mean logs, d = b − g. A candidate's n launches x₁…xₙ (mean
// x̄) give
//   - the log likelihood ratio Λ of "like bad" over "like good" (llr): x̄
//     normal around the endpoint's mean with variance σ²·(1/n + 1/n_E),
//     the endpoint's own uncertainty included (about d/σ²·Σ(xᵢ − (g+b)/2)
//     when n_E is large);
//   - Student's t of x̄ against each endpoint, se σ·√(1/n + 1/n_E), df as
//     σ's, two-sided: pGood and pBad.
//
// The verdict, checked in this order once the candidate has its starting
// launches:
//   - mixed: one launch alone is clearly like good (its own Λᵢ ≤ −ln K and
//     its pBad ≤ αU) and another clearly like bad (Λᵢ ≥ ln K, pGood ≤ αU):
//     a flip-flop or bimodal commit. A single commit's launch passes the
//     other endpoint's test with probability ≤ αU/2, so a false mixed
//     needs that at one launch of the whole bisect: ≲ 25 launches · αU/2
//     ≈ 1 % in the worst case (gaps of 2–3 σ), far less for larger gaps;
//   - between: pGood ≤ αU and pBad ≤ αU (significantly unlike both, an
//     in-between value or one beyond an endpoint); a commit exactly like
//     one endpoint is called between with probability ≤ αU per look;
//   - good: Λ ≤ −ln K and pGood > αU (the SPRT favours good by K to 1,
//     and good itself is not rejected); bad: Λ ≥ ln K and pBad > αU;
//   - unknown otherwise: one more launch, up to MaxLaunches, after which
//     the commit is skipped.
//
// K = 1/Alpha (100) and αU = Alpha/10 (0.001). Wald's SPRT with bounds
// ±ln K wrongly calls a commit like the other endpoint with probability
// at most about 1/K each way (the overshoot of the bound makes it far
// smaller when the gap is many σ: with the simulated host's 8 % gap at
// 0.5 % noise one launch gives |Λ| > 100). The SPRT treats σ as known
// and d as the endpoints measured it: with a gap of 1–2σ, estimated from
// endpoints that barely differ, the Monte-Carlo check names a wrong
// culprit in about 1 bisect of 25 (docs/performance.md).
// An in-between value within about t·se of an endpoint cannot be told
// from it with the launches taken: it is called like that endpoint.

// stat is what the endpoints' samples say, in log space.
type stat struct {
	ng, nb   int
	g, b     float64 // mean logs
	d        float64 // b − g
	sigma    float64 // pooled SD, max'ed with Noise
	df       float64 // σ's degrees of freedom, ng+nb−2 (≥ 1)
	p        float64 // the endpoints' test's p
	differ   bool    // p ≤ the look's level
	method   string  // "mann-whitney-u" or "student-t"
	regress  bool    // d is a regression (bad worse than good)
	deltaPct float64 // bad's geometric mean over good's, percent
}

// minSigma is the smallest σ the tests use (log units): identical values
// do not make a test divide by zero.
const minSigma = 1e-6

// logs is the natural logs of vs.
func logs(vs []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = math.Log(v)
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// sumSq is Σ(x − mean)².
func sumSq(xs []float64) float64 {
	m := mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s
}

// looks is the number of looks the endpoint phase can take, start and
// capN the per-side start and cap (capN ≥ start).
func looks(start, capN int) int { return 2*(capN-start) + 1 }

// endpointStat tests good's launches lg against bad's lb (values > 0) at
// level alpha (the look's), with the known noise (0 unknown).
func endpointStat(lg, lb []float64, alpha, noise float64, lower bool) stat {
	xg, xb := logs(lg), logs(lb)
	st := stat{ng: len(xg), nb: len(xb), g: mean(xg), b: mean(xb)}
	st.d = st.b - st.g
	st.df = math.Max(1, float64(st.ng+st.nb-2))
	st.sigma = math.Max(minSigma, math.Max(noise, math.Sqrt((sumSq(xg)+sumSq(xb))/st.df)))
	st.deltaPct = (math.Exp(st.d) - 1) * 100
	st.regress = (st.d < 0) != lower && st.d != 0
	if noise > 0 {
		st.method = "student-t"
		st.p = tTwoSided(st.d/(st.sigma*math.Sqrt(1/float64(st.ng)+1/float64(st.nb))), st.df)
	} else {
		st.method = "mann-whitney-u"
		st.p = 1
		if r, err := stats.MannWhitneyUTest(xg, xb, stats.LocationDiffers); err == nil && !math.IsNaN(r.P) {
			// With ties (launch values at the log's precision) go-moremath's
			// p can fall below what any arrangement of ng+nb values can
			// give (0 for 4 equal values against 3 equal ones): no
			// two-sided rank test is below 2/C(ng+nb, ng).
			st.p = math.Max(r.P, minRankP(st.ng, st.nb))
		}
	}
	st.differ = st.p <= alpha
	return st
}

// minRankP is the smallest two-sided p of a rank test of n1 against n2
// values: 2/C(n1+n2, n1), the two most extreme of the equally likely
// arrangements (capped at 1).
func minRankP(n1, n2 int) float64 {
	lc, _ := math.Lgamma(float64(n1 + n2 + 1))
	l1, _ := math.Lgamma(float64(n1 + 1))
	l2, _ := math.Lgamma(float64(n2 + 1))
	return math.Min(1, 2*math.Exp(l1+l2-lc))
}

// tTwoSided is the two-sided p of Student's t with df degrees of freedom.
func tTwoSided(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	p := 2 * (1 - stats.TDist{V: df}.CDF(math.Abs(t)))
	return math.Min(1, math.Max(0, p))
}

// evidence is what a candidate's launches say against the endpoints.
type evidence struct {
	n           int
	mean        float64 // mean log
	llr         float64 // Λ, ln LR of like bad over like good
	pGood, pBad float64 // t tests against each endpoint
	clearlyGood int     // launches clearly like good alone
	clearlyBad  int
	pClearGood  float64 // the largest pBad of a clearly-good launch
	pClearBad   float64 // the largest pGood of a clearly-bad launch
	deltaPct    float64 // geometric mean over good's, percent
	verdict     Verdict // Good, Bad, Between, Mixed or Unknown
	p           float64 // the p behind verdict (Commit.P)
	unlikeAlpha float64 // αU
	lrThreshold float64 // ln K
}

// judge classifies a candidate's launches vs (values > 0) against the
// endpoints st, with K = 1/alpha and αU = alpha/10 (see the top of this
// file).
func judge(vs []float64, st stat, alpha float64) evidence {
	xs := logs(vs)
	e := evidence{n: len(xs), mean: mean(xs), unlikeAlpha: alpha / 10, lrThreshold: math.Log(1 / alpha)}
	if e.n == 0 {
		e.verdict, e.p = Unknown, 1
		return e
	}
	se := func(n, nE int) float64 { return st.sigma * math.Sqrt(1/float64(n)+1/float64(nE)) }
	for _, x := range xs {
		li := llr(x, 1, st)
		pg := tTwoSided((x-st.g)/se(1, st.ng), st.df)
		pb := tTwoSided((x-st.b)/se(1, st.nb), st.df)
		switch {
		case li <= -e.lrThreshold && pb <= e.unlikeAlpha:
			e.clearlyGood++
			e.pClearGood = math.Max(e.pClearGood, pb)
		case li >= e.lrThreshold && pg <= e.unlikeAlpha:
			e.clearlyBad++
			e.pClearBad = math.Max(e.pClearBad, pg)
		}
	}
	e.llr = llr(e.mean, e.n, st)
	e.pGood = tTwoSided((e.mean-st.g)/se(e.n, st.ng), st.df)
	e.pBad = tTwoSided((e.mean-st.b)/se(e.n, st.nb), st.df)
	e.deltaPct = (math.Exp(e.mean-st.g) - 1) * 100
	switch {
	case e.clearlyGood > 0 && e.clearlyBad > 0:
		e.verdict, e.p = Mixed, math.Max(e.pClearGood, e.pClearBad)
	case e.pGood <= e.unlikeAlpha && e.pBad <= e.unlikeAlpha:
		e.verdict, e.p = Between, math.Max(e.pGood, e.pBad)
	case e.llr <= -e.lrThreshold && e.pGood > e.unlikeAlpha:
		e.verdict, e.p = Good, e.pBad
	case e.llr >= e.lrThreshold && e.pBad > e.unlikeAlpha:
		e.verdict, e.p = Bad, e.pGood
	default:
		e.verdict, e.p = Unknown, math.Min(e.pGood, e.pBad)
	}
	return e
}

// llr is Λ for a candidate's mean log m over n launches: the log
// likelihood ratio of "like bad" over "like good" of m, normal with the
// endpoint's mean and the variance of m minus that mean, σ²·(1/n + 1/n_E):
// the endpoint's own uncertainty is in it, so more launches of the
// candidate cannot make Λ more certain than the endpoints allow.
func llr(m float64, n int, st stat) float64 {
	vg := st.sigma * st.sigma * (1/float64(n) + 1/float64(st.ng))
	vb := st.sigma * st.sigma * (1/float64(n) + 1/float64(st.nb))
	return (m-st.g)*(m-st.g)/(2*vg) - (m-st.b)*(m-st.b)/(2*vb) + math.Log(vg/vb)/2
}

// derivedLaunches is the starting launches per candidate when Launches is
// 0: the SPRT's expected sample number with the endpoints' gap,
// 2·ln K·σ²/d² (the mean of Λ per launch is d²/2σ²), rounded up, within
// [1, capN].
func derivedLaunches(st stat, alpha float64, capN int) int {
	if st.d == 0 {
		return capN
	}
	n := math.Ceil(2 * math.Log(1/alpha) * st.sigma * st.sigma / (st.d * st.d))
	if math.IsNaN(n) || n > float64(capN) {
		return capN
	}
	return max(1, int(n))
}
