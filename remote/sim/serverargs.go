package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// serverOptions are the fake server's flags. SGLang's own flags that the
// model uses are accepted under their SGLang names; other SGLang flags are
// accepted and ignored so a real launch command line works unchanged.
type serverOptions struct {
	host          string
	port          int
	repo          string
	modelPath     string
	servedName    string
	tp, dp        int
	memFraction   float64
	eagle         bool
	specSteps     int
	startupDelay  time.Duration // model time
	timeScale     float64       // >1 runs every simulated duration faster
	seed          int64         // 0: random
	replayLog     string
	replayEvery   time.Duration // model time between replayed lines
	logPrefix     string        // "tp", "dp" or "none"
	noAutoLoad    bool
	simDir        string
	disableCustom bool

	// Failure modes, for tests of a launcher's failure classification.
	// The log text is SGLang's own (see serverfail.go).
	//   --sim-fail oom: CUDA OOM during weight loading, exit status 1
	//   --sim-fail nccl: NCCL error while initialising the TP group, exit 1
	//   --sim-fail crash-after-ready[=SECONDS]: CUDA illegal memory access
	//     SECONDS of model time (default 3) after the ready line, exit 1
	// A port that cannot be bound needs no flag: it is checked first thing,
	// as SGLang does before loading, and fails with uvicorn's bind error.
	simFail    string        // "", "oom", "nccl" or "crash-after-ready"
	crashAfter time.Duration // model time after ready, for crash-after-ready

	// Worker processes, for tests of killing a server's process tree. Worker
	// k is this binary re-executed as TP rank k's scheduler (argv[0]
	// "sglang::scheduler_TPk"); it holds that GPU's memory (run/worker-PID.json,
	// which the fake nvidia-smi adds up) and keeps holding it when the
	// server dies, until it is killed or the sim's owner is gone.
	//   --sim-workers N: spawn N workers, 0 ≤ N ≤ tp (default 0: none)
	//   --sim-stubborn-worker: the last worker ignores SIGTERM, SIGINT and
	//     SIGHUP, like a worker stuck in an NCCL call (implies one worker)
	//   --sim-setsid-worker: the first worker runs in its own session and
	//     process group, out of reach of a group or session kill (implies
	//     one worker)
	//   --sim-orphan-workers: on SIGTERM, or after a failure, the server exits
	//     without signalling its workers (like a Python parent that calls
	//     os._exit); otherwise it sends them SIGTERM on SIGTERM, waits up to
	//     2 s, and SIGKILLs them after a failure (SGLang's kill_process_tree)
	workers        int
	stubbornWorker bool
	setsidWorker   bool
	orphanWorkers  bool
}

// boolFlags are SGLang switches that take no value.
var boolFlags = map[string]bool{
	"--trust-remote-code": true, "--disable-custom-all-reduce": true, "--enable-metrics": true,
	"--disable-cuda-graph": true, "--disable-radix-cache": true, "--enable-dp-attention": true,
	"--skip-server-warmup": true, "--enable-torch-compile": true, "--disable-overlap-schedule": true,
	"--no-auto-load": true, "--eagle": true, "--log-requests": true,
	"--sim-stubborn-worker": true, "--sim-setsid-worker": true, "--sim-orphan-workers": true,
}

func parseServerArgs(args []string, cfg simConfig) (serverOptions, error) {
	o := serverOptions{
		host: "127.0.0.1", port: 30000, modelPath: "/shared/kimi-k2.5-int4",
		tp: cfg.GPUs, dp: 1, memFraction: 0.88, specSteps: 2,
		startupDelay: time.Duration(cfg.StartupDelay * float64(time.Second)),
		timeScale:    cfg.TimeScale, seed: cfg.Seed, replayLog: cfg.ReplayLog,
		replayEvery: 450 * time.Millisecond, logPrefix: cfg.LogPrefix,
		eagle: cfg.Eagle, noAutoLoad: cfg.NoAutoLoad,
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			return o, fmt.Errorf("unexpected argument %q", a)
		}
		name, val, hasVal := strings.Cut(a, "=")
		if boolFlags[name] {
			switch name {
			case "--no-auto-load":
				o.noAutoLoad = true
			case "--eagle":
				o.eagle = true
			case "--disable-custom-all-reduce":
				o.disableCustom = true
			case "--sim-stubborn-worker":
				o.stubbornWorker = true
			case "--sim-setsid-worker":
				o.setsidWorker = true
			case "--sim-orphan-workers":
				o.orphanWorkers = true
			}
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return o, fmt.Errorf("%s needs a value", name)
			}
			i++
			val = args[i]
		}
		var err error
		switch name {
		case "--host":
			o.host = val
		case "--port":
			o.port, err = strconv.Atoi(val)
		case "--repo":
			o.repo = val
		case "--model-path", "--model":
			o.modelPath = val
		case "--served-model-name":
			o.servedName = val
		case "--tp-size", "--tp":
			o.tp, err = strconv.Atoi(val)
		case "--dp-size", "--dp":
			o.dp, err = strconv.Atoi(val)
		case "--mem-fraction-static":
			o.memFraction, err = strconv.ParseFloat(val, 64)
		case "--speculative-algorithm", "--speculative-algo":
			o.eagle = strings.HasPrefix(strings.ToUpper(val), "EAGLE")
		case "--speculative-num-steps":
			o.specSteps, err = strconv.Atoi(val)
		case "--startup-delay":
			o.startupDelay, err = parseSeconds(val)
		case "--time-scale":
			o.timeScale, err = strconv.ParseFloat(val, 64)
		case "--seed", "--random-seed":
			o.seed, err = strconv.ParseInt(val, 10, 64)
		case "--replay-log":
			o.replayLog = val
		case "--replay-interval":
			o.replayEvery, err = parseSeconds(val)
		case "--log-prefix":
			o.logPrefix = val
		case "--sim-dir":
			o.simDir = val
		case "--sim-fail":
			err = o.parseSimFail(val)
		case "--sim-workers":
			o.workers, err = strconv.Atoi(val)
		default:
			// Another SGLang option with a value: accepted, no effect here.
		}
		if err != nil {
			return o, fmt.Errorf("%s %q: %w", name, val, err)
		}
	}
	switch o.logPrefix {
	case "":
		o.logPrefix = "tp"
		if o.dp > 1 {
			o.logPrefix = "dp"
		}
	case "tp", "none":
	case "dp":
		if o.dp == 1 {
			o.dp = 2
		}
	default:
		return o, fmt.Errorf("--log-prefix %q: want tp, dp or none", o.logPrefix)
	}
	switch {
	case o.port < 0 || o.port > 65535:
		return o, fmt.Errorf("--port %d out of range", o.port)
	case o.tp < 1 || o.tp > MaxGPUs:
		return o, fmt.Errorf("--tp-size %d out of range 1..%d", o.tp, MaxGPUs)
	case o.dp < 1 || o.dp > o.tp:
		return o, fmt.Errorf("--dp-size %d out of range 1..tp", o.dp)
	case !(o.timeScale > 0 && o.timeScale <= maxTimeScale):
		return o, fmt.Errorf("--time-scale must be in (0, %d]", maxTimeScale)
	case o.startupDelay < 0:
		return o, fmt.Errorf("--startup-delay must be ≥ 0")
	case o.replayEvery <= 0:
		return o, fmt.Errorf("--replay-interval must be > 0")
	case o.workers < 0 || o.workers > o.tp:
		return o, fmt.Errorf("--sim-workers %d out of range 0..tp", o.workers)
	case o.simFail != "" && o.replayLog != "":
		return o, fmt.Errorf("--sim-fail does not apply to --replay-log")
	}
	if o.stubbornWorker || o.setsidWorker {
		o.workers = max(o.workers, 1)
	}
	if o.servedName == "" {
		o.servedName = o.modelPath
	}
	return o, nil
}

// parseSimFail reads --sim-fail: oom, nccl or crash-after-ready[=SECONDS].
func (o *serverOptions) parseSimFail(val string) error {
	mode, secs, hasSecs := strings.Cut(val, "=")
	switch mode {
	case "oom", "nccl":
		if hasSecs {
			return fmt.Errorf("%s takes no value", mode)
		}
	case "crash-after-ready":
		o.crashAfter = 3 * time.Second
		if hasSecs {
			d, err := parseSeconds(secs)
			if err != nil || d < 0 {
				return fmt.Errorf("want crash-after-ready=SECONDS (≥ 0)")
			}
			o.crashAfter = d
		}
	default:
		return fmt.Errorf("want oom, nccl or crash-after-ready[=SECONDS]")
	}
	o.simFail = mode
	return nil
}

// maxTimeScale bounds --time-scale: beyond it the engine's sleeps vanish
// and it would only spin.
const maxTimeScale = 1000

// parseSeconds accepts a Go duration ("2.5s", "300ms") or plain seconds ("2.5").
func parseSeconds(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a duration")
	}
	return time.Duration(f * float64(time.Second)), nil
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// serverArgs renders a ServerArgs(...) repr like SGLang's launch echo.
func (s *server) serverArgs() string {
	o := s.opt
	spec, steps, topk, draft := "None", "None", "None", "None"
	if o.eagle {
		spec, steps, topk, draft = "'EAGLE3'", strconv.Itoa(o.specSteps), "1", strconv.Itoa(numDraftTokens)
	}
	kv := []string{
		"model_path='" + o.modelPath + "'", "tokenizer_path='" + o.modelPath + "'", "tokenizer_mode='auto'",
		"skip_tokenizer_init=False", "load_format='auto'", "trust_remote_code=True", "dtype='auto'",
		"kv_cache_dtype='auto'", "quantization=None", "context_length=None", "device='cuda'",
		"served_model_name='" + o.servedName + "'", "chat_template=None", "is_embedding=False", "revision=None",
		"host='" + o.host + "'", fmt.Sprintf("port=%d", o.port), fmt.Sprintf("mem_fraction_static=%g", o.memFraction),
		"max_running_requests=None", "max_total_tokens=None", "chunked_prefill_size=8192", "max_prefill_tokens=16384",
		"schedule_policy='fcfs'", "schedule_conservativeness=1.0", "cpu_offload_gb=0",
		fmt.Sprintf("tp_size=%d", o.tp), "stream_interval=1", "stream_output=False", fmt.Sprintf("random_seed=%d", o.seed),
		"watchdog_timeout=300", "dist_timeout=None", "download_dir=None", "base_gpu_id=0", "gpu_id_step=1",
		"log_level='info'", "log_level_http=None", "log_requests=False", "log_requests_level=0", "show_time_cost=False",
		"enable_metrics=False", fmt.Sprintf("decode_log_interval=%d", decodeLogInterval), "api_key=None",
		fmt.Sprintf("dp_size=%d", o.dp), "load_balance_method='round_robin'", "dist_init_addr=None", "nnodes=1", "node_rank=0",
		"speculative_algorithm=" + spec, "speculative_num_steps=" + steps, "speculative_eagle_topk=" + topk,
		"speculative_num_draft_tokens=" + draft, "disable_cuda_graph=False", "cuda_graph_max_bs=160",
		"disable_custom_all_reduce=" + pyBool(o.disableCustom), "enable_dp_attention=" + pyBool(o.logPrefix == "dp"),
		"enable_piecewise_cuda_graph=False",
	}
	return strings.Join(kv, ", ")
}
