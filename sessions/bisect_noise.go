package sessions

import (
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/history"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// BisectNoiseMinLaunches is how many launches (pooled over the
// configurations of the class) a known A/A noise must stand on before a
// bisect takes it as its Method.Noise: fewer leave the noise unknown
// (the method's Mann–Whitney endpoints instead).
const BisectNoiseMinLaunches = 5

// knownNoise is the A/A noise a bisect of metric (a Metric* of the
// bisect) launched as l takes when its Method.Noise is 0: the pooled log
// SD (compare.LaunchNoise) of the launches of l's configuration class,
// any commit, among exps (this session's and the host's earlier
// experiments), when it stands on at least BisectNoiseMinLaunches
// launches; nil otherwise, and for the latency metrics (whose per-launch
// value a compare reads otherwise).
func knownNoise(exps []ledger.Experiment, metric string, l event.LaunchInfo) *compare.NoiseEstimate {
	var name string
	switch metric {
	case MetricLogTokS:
		name = compare.MetricLogTokS
	case MetricBenchTokS:
		name = compare.MetricBenchTokS
	default:
		return nil
	}
	n := compare.LaunchNoise(exps, name, l, "")
	if n == nil || n.Launches < BisectNoiseMinLaunches || !(n.SD > 0) {
		return nil
	}
	return n
}

// noiseExperiments are the experiments a bisect's known noise is read
// from: the host's earlier journals' (those LoadHistory loaded, else
// collected now) and this session's own.
func (s *Session) noiseExperiments(lab *Lab) []ledger.Experiment {
	exps := s.HistoryExperiments()
	if _, ok := s.History(); !ok {
		exps = history.Experiments(history.Fold(s.collectHistory()))
	}
	if lab != nil {
		exps = append(exps, lab.Experiments()...)
	}
	return exps
}
