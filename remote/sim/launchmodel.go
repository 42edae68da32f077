package sim

import (
	"math/rand/v2"
	"slices"
)

// DefaultLaunchSamples is how many steady samples LaunchMedian takes the
// median of when asked for none: the fake server's steady window.
const DefaultLaunchSamples = 10

// LaunchMedian is one simulated launch's value of a metric whose mean
// (before noise) is mean: the launch draws its own factor (the fake
// server's per-launch noise, σ 0.4 % clipped to ±1 %), then samples
// steady samples each with the per-sample noise (σ 0.6 % clipped to
// ±1.5 %), and returns their median, in mean's unit. samples < 1 takes
// DefaultLaunchSamples. It is the noise model the fake server's log
// lines follow, for Monte-Carlo checks of procedures that take one value
// per launch (sessions/bisect); rng is the caller's, so fixed seeds give
// fixed values.
func LaunchMedian(rng *rand.Rand, mean float64, samples int) float64 {
	if samples < 1 {
		samples = DefaultLaunchSamples
	}
	launch := mean * launchNoise(rng)
	vs := make([]float64, samples)
	for i := range vs {
		vs[i] = launch * sampleNoise(rng)
	}
	slices.Sort(vs)
	if samples%2 == 1 {
		return vs[samples/2]
	}
	return (vs[samples/2-1] + vs[samples/2]) / 2
}
