package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func probeNames(ps []VersionProbe) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestVersionProbes(t *testing.T) {
	c, err := Parse("v.toml", []byte(`
[presets.mine]
command = "python3 -m sglang.launch_server --model-path {model}"
[presets.mine.versions]
flashinfer = "python3 -c 'import flashinfer; print(flashinfer.__version__)'"
aiter = "echo 1"
nccl = ""
python = "/opt/venv/bin/python3 --version"

[presets.v]
command = "vllm serve {model}"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		preset string
		names  []string
	}{
		{"sglang", []string{"driver", "cuda", "nccl", "torch", "sglang", "python"}},
		{"vllm", []string{"driver", "cuda", "nccl", "torch", "vllm", "python"}},
		{"v", []string{"driver", "cuda", "nccl", "torch", "vllm", "python"}},
		{"mine", []string{"driver", "cuda", "torch", "sglang", "python", "aiter", "flashinfer"}},
		{"sim", []string{"driver", "cuda", "nccl", "torch", "sglang", "python"}},
		{"unknown", []string{"driver", "cuda", "nccl", "torch", "python"}},
	} {
		if got := probeNames(c.VersionProbes(tc.preset)); !slices.Equal(got, tc.names) {
			t.Errorf("%s: probes %v, want %v", tc.preset, got, tc.names)
		}
	}
	mine := c.VersionProbes("mine")
	if i := slices.IndexFunc(mine, func(p VersionProbe) bool { return p.Name == "python" }); mine[i].Command != "/opt/venv/bin/python3 --version" {
		t.Errorf("python probe not replaced: %+v", mine[i])
	}
	for _, p := range c.VersionProbes("sim") {
		if p.Command != "flightdeck sim version "+p.Name {
			t.Errorf("sim probe %+v is not answered by the simulated host", p)
		}
	}
	if p := c.VersionProbes("sglang")[0]; p.Command != "nvidia-smi --query-gpu=driver_version --format=csv,noheader" {
		t.Errorf("driver probe %+v", p)
	}
	// The built-in table is not shared between configurations.
	b := Builtins()
	b.Presets["sim"].Versions["driver"] = "changed"
	if Builtins().Presets["sim"].Versions["driver"] == "changed" {
		t.Error("Builtins shares the sim preset's versions")
	}
}

func TestVersionRank(t *testing.T) {
	names := []string{"python", "zz", "vllm", "aiter", "driver", "sglang", "torch", "nccl", "cuda"}
	slices.SortFunc(names, func(a, b string) int {
		if d := VersionRank(a) - VersionRank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	if want := []string{"driver", "cuda", "nccl", "torch", "sglang", "vllm", "python", "aiter", "zz"}; !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

func TestVersionProbeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line      int
		key, msg  string
	}{
		{"bad name", "[presets.p]\ncommand = \"run\"\n[presets.p.versions]\n\"my probe\" = \"echo 1\"\n", 4, `presets.p.versions."my probe"`, `version name "my probe"`},
		{"newline", "[presets.p]\ncommand = \"run\"\nversions = { torch = \"python3\\n-V\" }\n", 3, "presets.p.versions.torch", "a newline at byte 7"},
		{"not a string", "[presets.p]\ncommand = \"run\"\n[presets.p.versions]\ntorch = 2\n", 4, "presets.p.versions.torch", "expected a string, got a TOML integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("v.toml", []byte(tc.src))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) || !strings.Contains(msg, tc.key) || !strings.HasPrefix(msg, "v.toml:"+strconv.Itoa(tc.line)+":") {
				t.Errorf("error %q, want line %d, key %s, %q", msg, tc.line, tc.key, tc.msg)
			}
		})
	}
}

func TestExampleVersions(t *testing.T) {
	var b strings.Builder
	for line := range strings.Lines(Example) {
		if commentedKey.MatchString(line) {
			line = strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
		}
		b.WriteString(line)
	}
	c, err := Parse("example.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	ps := c.VersionProbes("sglang-fp8")
	if got, want := probeNames(ps), []string{"driver", "cuda", "torch", "sglang", "python", "flashinfer"}; !slices.Equal(got, want) {
		t.Errorf("example probes %v, want %v", got, want)
	}
	if last := ps[len(ps)-1]; last.Command != `python3 -c 'import importlib.metadata as m; print(m.version("flashinfer-python"))'` {
		t.Errorf("flashinfer probe %q", last.Command)
	}
}
