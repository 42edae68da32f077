package config

// Example is a commented configuration file for `flightdeck config init`.
// As written it only restates the built-in defaults; the commented-out
// tables show every key and, uncommented, parse as well (the tests check
// both).
const Example = `# flightdeck configuration.
# Location: $XDG_CONFIG_HOME/flightdeck/config.toml, by default ~/.config/flightdeck/config.toml.
# Check it with: flightdeck config check

# What a host or the command line leaves unsaid.
[defaults]
preset  = "sglang"              # launch preset: built-in sglang, sglang-eagle3, vllm, sim, or one of [presets.*]
profile = "none"                # environment profile: built-in none, nccl-ll-ring, nccl-debug, or one of [profiles.*]
# model = "/models/Kimi-K2.5"   # fills {model}
# draft_model = "/models/Kimi-K2.5-eagle3"   # fills {draft_model} (the sglang-eagle3 preset)
# tp    = 8                     # fills {tp}; 0 or absent: the number of GPUs on the host
# port  = 30000                 # fills {port}; absent: 30000 for sglang servers, 8000 for vllm
log_dir = "~/.flightdeck/logs"  # on the GPU host: per-launch logs and the pidfile

# Hosts: the table name is what you type, as in: flightdeck connect gpu-box
# Any key left out comes from [defaults].
# [hosts.gpu-box]
# target  = "root@10.0.0.7"          # user@host[:port], an alias from ~/.ssh/config, or "local"; default: the table name
# log_dir = "/data/logs"
# repo    = "/root/sglang"           # the server's git checkout
# workdir = "/root/sglang"           # where the server is launched; default: repo, else the login directory
# preset  = "sglang-fp8"
# profile = "my-nccl"
# model   = "/shared/kimi-k2.5-int4"
# tp      = 8
# port    = 30001

# Environment profiles for the server process. A profile named like a
# built-in one replaces it.
# [profiles.my-nccl]
# extends = "nccl-ll-ring"                              # start from another profile (chains allowed, not cycles)
# env     = { NCCL_NTHREADS = "256", NCCL_DEBUG = "WARN" }  # names [A-Z_][A-Z0-9_]*; set over the parent's
# unset   = ["NCCL_BUFFSIZE"]                           # drop these from what the parent sets

# Launch presets. The command is an argv split with shell quoting rules but
# never run by a shell: no $VAR, $(...), pipes, ; or redirections.
# Placeholders {model}, {tp}, {port}, {host} and {draft_model} are replaced
# by whole values inside their word (in the script of sh -c or bash -c,
# quoted for that shell); write {{ and }} for literal braces.
# A preset named like a built-in one replaces it.
# [presets.sglang-fp8]
# command = "python3 -m sglang.launch_server --model-path {model} --tp-size {tp} --port {port} --host 127.0.0.1 --quantization fp8"
# server  = "sglang"                 # log format and readiness rules: sglang or vllm; default: vllm if the command says vllm
# extra   = ["--enable-metrics"]     # appended after the command, each entry split like it

# Version probes, recorded in each experiment's fingerprint: name = a shell
# command (run with sh -c on the GPU host, 10 s deadline) whose first output
# line is the version. Built in for every preset: driver, cuda, nccl, torch,
# python, and sglang or vllm by the server kind. Same name: replaces the
# built-in probe; "" turns it off.
# [presets.sglang-fp8.versions]
# flashinfer = "python3 -c 'import importlib.metadata as m; print(m.version(\"flashinfer-python\"))'"
# python     = "/opt/venv/bin/python3 --version"
# nccl       = ""
`
