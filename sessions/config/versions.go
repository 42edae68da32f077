package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"unicode/utf8"
)

// VersionProbe is one version probe: a POSIX shell command run on the GPU
// host (with sh -c) whose first line of output is the version of Name. The
// probes are captured in each experiment's fingerprint.
type VersionProbe struct {
	Name    string // "driver", "cuda", "nccl", "torch", "sglang", "vllm", "python", or a name of the file's
	Command string
}

// Built-in version probes, by name. The Python ones read package metadata
// where they can (fast: nothing is imported); cuda and nccl ask torch,
// which is what the server loads.
var builtinVersions = map[string]string{
	"driver": "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
	"cuda":   `python3 -c 'import torch; print(torch.version.cuda)'`,
	"nccl":   `python3 -c 'import torch; v = torch.cuda.nccl.version(); print(".".join(map(str, v)) if isinstance(v, tuple) else v)'`,
	"torch":  `python3 -c 'import importlib.metadata as m; print(m.version("torch"))'`,
	"sglang": `python3 -c 'import importlib.metadata as m; print(m.version("sglang"))'`,
	"vllm":   `python3 -c 'import importlib.metadata as m; print(m.version("vllm"))'`,
	"python": `python3 -c 'import platform; print(platform.python_version())'`,
}

// versionOrder is the display order of the well-known probes; others follow
// by name.
var versionOrder = []string{"driver", "cuda", "nccl", "torch", "sglang", "vllm", "python"}

// simVersions are the "sim" preset's probes: the simulated host's
// flightdeck answers them with fixed values.
func simVersions() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"driver", "cuda", "nccl", "torch", "sglang", "python"} {
		m[n] = "flightdeck sim version " + n
	}
	return m
}

// VersionProbes returns the version probes of preset name, in display order
// (driver, cuda, nccl, torch, sglang, vllm, python, then the others by
// name): the built-in ones — driver, cuda, nccl, torch, python, and sglang
// or vllm by the preset's server kind — with the preset's versions table
// over them (a probe of the same name replaces the built-in one; an empty
// command turns it off). An unknown preset gets the built-in probes
// without sglang and vllm.
func (c *Config) VersionProbes(name string) []VersionProbe {
	p, known := c.Presets[name]
	probes := map[string]string{}
	for _, n := range []string{"driver", "cuda", "nccl", "torch", "python"} {
		probes[n] = builtinVersions[n]
	}
	if known && (p.Server == ServerSGLang || p.Server == ServerVLLM) {
		probes[p.Server] = builtinVersions[p.Server]
	}
	maps.Copy(probes, p.Versions)
	var out []VersionProbe
	for _, n := range versionOrder {
		if cmd := probes[n]; cmd != "" {
			out = append(out, VersionProbe{Name: n, Command: cmd})
		}
		delete(probes, n)
	}
	for _, n := range slices.Sorted(maps.Keys(probes)) {
		if cmd := probes[n]; cmd != "" {
			out = append(out, VersionProbe{Name: n, Command: cmd})
		}
	}
	return out
}

// VersionRank orders version names for display: the well-known ones first
// (driver 0, cuda 1, nccl 2, torch 3, sglang 4, vllm 5, python 6), every
// other name after them (7); ties go by name.
func VersionRank(name string) int {
	if i := slices.Index(versionOrder, name); i >= 0 {
		return i
	}
	return len(versionOrder)
}

var versionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.+-]{0,31}$`)

// checkVersions reports bad names and commands in a preset's versions table.
func (p *parser) checkVersions(preset string, versions map[string]string) {
	for _, n := range slices.Sorted(maps.Keys(versions)) {
		key := []string{"presets", preset, "versions", n}
		if !versionName.MatchString(n) {
			p.errorf(key, "version name %q: use letters, digits and _ . + - (at most 32, not starting with punctuation)", n)
		}
		if msg := checkProbeCommand(versions[n]); msg != "" {
			p.errorf(key, "%s", msg)
		}
	}
}

// checkProbeCommand refuses a probe command that a shell word cannot carry
// (see remote.Quote): control characters, including newlines, and invalid
// UTF-8.
func checkProbeCommand(s string) string {
	if !utf8.ValidString(s) {
		return "the command is not valid UTF-8"
	}
	for i, r := range s {
		if r < 0x20 || r == 0x7f {
			what := fmt.Sprintf("a control character (%U)", r)
			switch r {
			case '\n':
				what = "a newline"
			case '\t':
				what = "a tab"
			}
			return fmt.Sprintf("the command has %s at byte %d: write it on one line, with spaces", what, i)
		}
	}
	return ""
}
