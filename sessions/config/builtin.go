package config

import "maps"

// sglangCommand is the command of the built-in "sglang" preset, which
// "sglang-eagle3" extends.
const sglangCommand = "python3 -m sglang.launch_server --model-path {model} --tp-size {tp} --port {port} --host 127.0.0.1 --trust-remote-code"

var (
	builtinProfiles = []Profile{
		{Name: "none", Env: map[string]string{}},
		{Name: "nccl-ll-ring", Env: map[string]string{
			"NCCL_PROTO":         "LL",
			"NCCL_ALGO":          "Ring",
			"NCCL_P2P_LEVEL":     "SYS",
			"NCCL_MAX_NCHANNELS": "16",
			"NCCL_BUFFSIZE":      "16777216",
			"NCCL_NTHREADS":      "512",
		}},
		{Name: "nccl-debug", Env: map[string]string{
			"NCCL_DEBUG":        "INFO",
			"NCCL_DEBUG_SUBSYS": "INIT,COLL",
		}},
	}
	builtinPresets = []Preset{
		{Name: "sglang", Server: ServerSGLang, Command: sglangCommand},
		{Name: "sglang-eagle3", Server: ServerSGLang, Command: sglangCommand +
			" --speculative-algorithm EAGLE3 --speculative-draft-model-path {draft_model}" +
			" --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 3"},
		{Name: "vllm", Server: ServerVLLM, Command: "vllm serve {model} --tensor-parallel-size {tp} --port {port} --host 127.0.0.1"},
		// The simulated server of `flightdeck demo`; needs flightdeck on the host's PATH.
		// Its version probes are answered by the simulated host's flightdeck.
		{Name: "sim", Server: ServerSGLang, Command: "flightdeck sim server --model-path {model} --tp-size {tp} --port {port} --host 127.0.0.1",
			Versions: simVersions()},
	}
)

// Builtins returns a configuration with only the built-ins: the defaults
// (preset "sglang", profile "none", log_dir "~/.flightdeck/logs"), the
// profiles "none", "nccl-ll-ring" and "nccl-debug", and the presets
// "sglang", "sglang-eagle3", "vllm" and "sim" (the simulated server of
// `flightdeck demo`, which needs flightdeck on the host's PATH). Each call
// returns a new Config that the caller may change.
func Builtins() *Config {
	c := &Config{
		Defaults: Defaults{Preset: "sglang", Profile: "none", LogDir: "~/.flightdeck/logs"},
		Hosts:    map[string]Host{},
		Profiles: map[string]Profile{},
		Presets:  map[string]Preset{},
	}
	for _, p := range builtinProfiles {
		p.Env = maps.Clone(p.Env)
		p.Builtin = true
		c.Profiles[p.Name] = p
	}
	for _, p := range builtinPresets {
		p.Versions = maps.Clone(p.Versions)
		p.Builtin = true
		c.Presets[p.Name] = p
	}
	return c
}
