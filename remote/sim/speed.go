package sim

import (
	"errors"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Reference decode rates from DESIGN.md (8×H200-class GPUs, TP 8, PCIe Gen5
// x16, one request), in tok/s.
const (
	BaseTokPerSec           = 62.5 // no NCCL tuning
	TunedTokPerSec          = 89.0 // the seeds' full NCCL profile
	RegressionFactor        = 0.92 // the repo's working tree holds the regressing change (89 → ~82)
	EagleTunedTokPerSec     = 94.0 // EAGLE-3, 2 steps, tuned, good tree
	EagleRegressedTokPerSec = 60.0 // EAGLE-3 on the regressing tree (seeds: 59–61)
)

// RegressionMarker is the code the regressing commit adds to pynccl.py's
// all-reduce path; the fake server reads PyncclPath in --repo at launch and
// runs slower when the marker is present, so a checkout or revert of that
// file restores the speed the way real code would.
const RegressionMarker = "is_in_piecewise_cuda_graph()"

// PyncclPath is the regressing file, relative to the repository root.
const PyncclPath = "python/sglang/srt/distributed/device_communicators/pynccl.py"

// ncclProfile is the seeds' NCCL tuning (all six must be present, with these
// values, for the tuned rate).
var ncclProfile = [][2]string{
	{"NCCL_PROTO", "LL"},
	{"NCCL_ALGO", "Ring"},
	{"NCCL_P2P_LEVEL", "SYS"},
	{"NCCL_MAX_NCHANNELS", "16"},
	{"NCCL_BUFFSIZE", "16777216"},
	{"NCCL_NTHREADS", "512"},
}

// NCCLProfile returns the seeds' six NCCL variables as a new map.
func NCCLProfile() map[string]string {
	m := make(map[string]string, len(ncclProfile))
	for _, kv := range ncclProfile {
		m[kv[0]] = kv[1]
	}
	return m
}

// HasNCCLProfile reports whether environ ("NAME=VALUE" entries, later ones
// winning) sets all six profile variables to the profile's values.
func HasNCCLProfile(environ []string) bool {
	got := map[string]string{}
	for _, e := range environ {
		if k, v, ok := strings.Cut(e, "="); ok {
			got[k] = v
		}
	}
	for _, kv := range ncclProfile {
		if got[kv[0]] != kv[1] {
			return false
		}
	}
	return true
}

// TreeRegressed reports whether the working tree of the repository at repo
// holds the regressing change (RegressionMarker in PyncclPath). A missing
// file is not regressed; other read errors are returned.
func TreeRegressed(repo string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(repo, PyncclPath))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(string(b), RegressionMarker), nil
}

// ModelTokPerSec is the fake server's mean single-request decode rate in
// tok/s before noise: 62.5 untuned, 89 with the full NCCL profile, ×0.92 on a
// regressed tree; with EAGLE-3, 94 tuned and 60 regressed (untuned EAGLE
// scales by 62.5/89).
func ModelTokPerSec(tuned, regressed, eagle bool) float64 {
	if eagle {
		r := EagleTunedTokPerSec
		if regressed {
			r = EagleRegressedTokPerSec
		}
		if !tuned {
			r *= BaseTokPerSec / TunedTokPerSec
		}
		return r
	}
	r := BaseTokPerSec
	if tuned {
		r = TunedTokPerSec
	}
	if regressed {
		r *= RegressionFactor
	}
	return r
}

// Noise: a per-launch factor (σ 0.4 %, clipped to ±1 %) and a per-log-window
// factor (σ 0.6 %, clipped to ±1.5 %).
func launchNoise(rng *rand.Rand) float64 { return 1 + clip(rng.NormFloat64()*0.004, 0.01) }
func sampleNoise(rng *rand.Rand) float64 { return 1 + clip(rng.NormFloat64()*0.006, 0.015) }

func clip(x, lim float64) float64 { return math.Max(-lim, math.Min(lim, x)) }

// batchRate is the aggregate decode rate (tok/s) of bs concurrent requests
// given the single-request rate: each request slows by 3 % per extra peer.
func batchRate(single float64, bs int) float64 {
	if bs < 1 {
		bs = 1
	}
	return single * float64(bs) / (1 + 0.03*float64(bs-1))
}
