package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLaunchMedian checks the launch model's centre and spread: the SD of
// log(launch median) is the per-launch σ (0.4 %) and the median's share
// of the per-sample σ (0.6 %·1.25/√10 ≈ 0.24 %) combined, about 0.47 %.
func TestLaunchMedian(t *testing.T) {
	for _, samples := range []int{0, 1, 10} {
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 20000
		var sum, sum2 float64
		for range n {
			l := math.Log(LaunchMedian(rng, 89, samples) / 89)
			sum += l
			sum2 += l * l
		}
		mean := sum / n
		sd := math.Sqrt(sum2/n - mean*mean)
		want := 0.0047
		if samples == 1 {
			want = math.Sqrt(0.004*0.004 + 0.006*0.006)
		}
		if math.Abs(mean) > 0.0003 || math.Abs(sd-want)/want > 0.1 {
			t.Errorf("samples %d: mean log ratio %.5f, sd %.5f; want ~0, ~%.4f", samples, mean, sd, want)
		}
	}
}
