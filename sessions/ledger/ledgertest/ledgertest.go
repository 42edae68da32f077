// Package ledgertest holds the experiments the tests of the ledger's
// readers share (sessions/compare and sessions/report): experiments as
// the simulated host records them, at two commits and two env profiles,
// with their benchmark runs. It is imported only by tests
// (cmd/flightdeck's TestImportsPointOneWay checks).
package ledgertest

import (
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// The two commits the experiments run at.
const (
	HeadA = "a6d51c0e9f1b2c3d4e5f60718293a4b5c6d7e8f9"
	HeadB = "32074270aabbccddeeff00112233445566778899"
)

// T0 is when the simulated host's experiments start.
var T0 = time.Date(2026, 11, 29, 21, 58, 7, 123456789, time.UTC)

// Profiles are the simulated host's env profiles.
var Profiles = map[string]map[string]string{
	"baseline":     {"CUDA_DEVICE_MAX_CONNECTIONS": "1"},
	"nccl-ll-ring": {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"},
}

// Experiment is an experiment as the simulated host records it: launched
// (its own launch, with its own log) with a profile at a commit, measured
// at about tok tok/s.
func Experiment(id, profile, head string, tok float64) ledger.Experiment {
	l := &event.LaunchInfo{Preset: "sim", Profile: profile, Server: "sglang", LogPath: "/var/log/flightdeck/sim-" + id + ".log", At: T0,
		Argv: []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/llama", "--tp-size", "8", "--port", "30000", "--api-key", "sk-1"},
		Env:  Profiles[profile]}
	rl := server.RedactLaunch(*l)
	samples := []float64{tok - 0.4, tok + 0.2, tok - 0.1, tok + 0.3, tok, tok + 0.1, tok - 0.2}
	sum := ledger.ResultOf(samples, 3, nil)
	g := eventtest.GPU(0, 0)
	g2 := eventtest.GPU(1, 0)
	return ledger.Experiment{ID: id, Name: profile + " @ " + head[:7], StartedBy: event.TriggerLaunch, EndedBy: event.TriggerRelaunch,
		Started: T0, Ended: T0.Add(time.Minute), Launch: &rl,
		Fingerprint: &event.Fingerprint{Hostname: "gpu-box", Kernel: "6.8.0-45-generic", Launch: &rl, CommandLine: server.CommandLine(rl),
			Git:      &event.GitState{Repo: "/srv/sglang", Head: head, Branch: "main", Subject: "subject of " + head[:7]},
			Versions: []event.Version{{Name: "driver", Value: "590.48.01"}, {Name: "torch", Value: "2.9.1"}, {Name: "sglang", Value: "0.5.6"}}},
		Result:  sum,
		EndGPUs: []event.GPU{g, g2},
	}
}

// BenchConfig is the settings of WithBench's runs.
var BenchConfig = event.BenchConfig{Endpoint: event.BenchCompletions, InputLen: 128, OutputLen: 128, Concurrency: 1, Requests: 4, Warmup: 1, Seed: 1}

// WithBench is x with two benchmark runs: b1, 4 requests at tok tok/s and
// a TTFT of about ttft ms (a failed fifth left out of the figures), and
// b2, which failed to connect.
func WithBench(x ledger.Experiment, tok, ttft float64) ledger.Experiment {
	r := &event.BenchResult{Config: BenchConfig, Completed: 4, OutputTokPerSec: tok, TTFT: event.Dist{N: 4, Median: ttft}, ITL: event.Dist{N: 100, Median: 16},
		TPOT: event.Dist{N: 4, Median: 16.1}, E2E: event.Dist{N: 4, Median: 2000}}
	for i := range 4 {
		r.Requests = append(r.Requests, event.BenchRequest{TTFT: ttft + float64(i), E2E: 2000 + float64(i), TPOT: 16 + float64(i)/10, ITLMedian: 16, OutputTokens: 128})
	}
	r.Requests = append(r.Requests, event.BenchRequest{E2E: 5, Err: "HTTP 503"}) // failed: left out
	x.Bench = []event.BenchDone{{ID: "b1", Exp: x.ID, Result: r}, {ID: "b2", Exp: x.ID, Err: "connection refused"}}
	return x
}

// WriteJournal writes a real journal at path (journal.Create) with header
// h holding exps as a cockpit records them: per experiment, in order, its
// exp-start, exp-repeat, exp-fingerprint, bench-done runs and exp-end
// with its result. The experiments are moved to start at h.Created plus two
// minutes each (their launches with them), so that experiments of two
// journals never share a launch.
func WriteJournal(path string, h event.SessionHeader, exps ...ledger.Experiment) error {
	w, err := journal.Create(path, h)
	if err != nil {
		return err
	}
	for i, x := range exps {
		at := h.Created.Add(time.Duration(i+1) * 2 * time.Minute)
		var launch *event.LaunchInfo
		if x.Launch != nil {
			l := *x.Launch
			l.At = at
			launch = &l
		}
		evs := []event.Event{{At: at, Data: event.ExperimentStart{ID: x.ID, Name: x.Name, Hypothesis: x.Hypothesis, Trigger: x.StartedBy, Launch: launch}}}
		if x.Repeat != nil {
			evs = append(evs, event.Event{At: at, Data: *x.Repeat})
		}
		if x.Fingerprint != nil {
			fp := *x.Fingerprint
			fp.Launch = launch
			evs = append(evs, event.Event{At: at.Add(time.Second), Data: event.ExperimentFingerprint{Exp: x.ID, Fingerprint: fp}})
		}
		for _, b := range x.Bench {
			evs = append(evs, event.Event{At: at.Add(50 * time.Second), Data: b})
		}
		evs = append(evs, event.Event{At: at.Add(time.Minute), Data: event.ExperimentEnd{Exp: x.ID, Trigger: x.EndedBy, Conclusion: x.Conclusion, Result: x.Result, GPUs: x.EndGPUs}})
		for _, e := range evs {
			if err := w.Write(e); err != nil {
				w.Close()
				return err
			}
		}
	}
	return w.Close()
}
