package journal

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/event/eventtest"
)

// t0 is the journals' created time in tests (not on a whole microsecond:
// Create rounds it).
var t0 = time.Date(2026, 11, 29, 21, 58, 7, 123456789, time.UTC)

func ok(v float64) event.Reading { return event.Reading{Value: v} }

func testSample(at time.Time, tick, n int) event.GPUSample {
	s := event.GPUSample{At: at}
	for i := range n {
		s.GPUs = append(s.GPUs, eventtest.GPU(i, tick))
	}
	return s
}

func f64(v float64) *float64 { return &v }

// roundTripEvents has at least one event of every kind of the format, with
// the awkward values each codec must keep.
func roundTripEvents() []event.Event {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	launch := event.LaunchInfo{
		Preset: "sim", Profile: "nccl-ll-ring", Server: "sglang",
		Argv:    []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/llama 70b", "--tp", "8"},
		Env:     map[string]string{"NCCL_ALGO": "Ring", "HF_TOKEN": "<redacted>"},
		Workdir: "/srv/sglang", LogPath: "/var/log/fd/sim-20261129-215807.log", ExitPath: "/var/log/fd/sim.exit",
		Port: 30000, At: at(1.5),
	}
	odd := eventtest.GPU(3, 1)
	odd.UtilGPUPct = event.Reading{Status: event.CellErr, Raw: "ERR!"}
	odd.PowerDrawW = event.Reading{Status: event.CellLost, Raw: "[GPU is lost]", Value: 612.5}
	odd.TempC = event.Reading{Value: -0.0 * -1} // plain 0
	odd.ClockEvents = event.ClockEvents{Status: event.CellNotSupported, Raw: "[Not Supported]"}
	odd.PState = event.Text{S: "[Unknown Error]", Status: event.CellUnknownError}
	odd.Lost = true
	odd.Name = event.Text{S: "NVIDIA \"H200\" \\ é"}

	var evs []event.Event
	add := func(s float64, p event.Payload) { evs = append(evs, event.Event{At: at(s), Data: p}) }
	add(0, event.ConnState{Host: "gpu-box", Conn: event.Connected, Since: at(0)})
	add(0.0000005, testSample(at(0.0000005), 0, 8)) // keyframe
	add(0.5, testSample(at(0.5), 1, 8))             // delta
	s := testSample(at(1.0), 2, 8)
	s.GPUs = slices.Delete(s.GPUs, 5, 6)
	s.Missing = []int{5}
	s.GPUs[3] = odd
	add(1.0, s)
	s = testSample(at(1.2), 3, 2)
	s.At = at(1.1999) // a sample time that is not the event's
	add(1.5, s)
	add(1.7, event.GPUSample{})  // nothing at all, zero At
	s = testSample(at(61), 4, 9) // keyframe again, a new GPU 8
	add(61.25, s)
	s = testSample(at(62), 5, 9)
	s.GPUs[8].Index = 12 // a GPU the keyframe lacks: whole row
	add(62, s)
	add(2, event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:0B:00.0", Reason: "Unknown Error", NeedsReboot: true, NVMLVersion: "570.124", Line: "Unable to determine the device handle for GPU0000:0B:00.0: Unknown Error"})
	add(3, event.GPUStale{LastSample: at(1), Missed: 3, Reason: "no sample for 3 intervals"})
	add(3.000001, event.GPUStale{Missed: 1, Reason: "nvidia-smi exited: exit status 6"})
	add(4, event.LogLines{Path: "/var/log/fd/sim.log", Lines: []event.LogLine{
		{Offset: 0, Text: []byte("\x1b[32m[2026-11-29 21:58:08] INFO\x1b[0m server starting <html> & \"quotes\"\t\\")},
		{Offset: 92, Text: []byte("second line with unicode: 模型 ✓")},
		{Offset: 127, Text: []byte{0xff, 0xfe, 'b', 'a', 'd', 0x00}},
		{Offset: 200, Text: []byte("after a gap")},
		{Offset: 212, Text: []byte{}},
		{Offset: 213, Text: []byte{0xc3}},
		{Offset: 999, Text: []byte{0x80, 0x81}},
	}})
	add(4.1, event.LogLines{Path: "/var/log/fd/sim.log"})
	add(5, event.LogReset{Path: "/var/log/fd/sim.log", Reason: "truncated", Offset: 0})
	add(5.1, event.LogNotice{Path: "/var/log/fd/sim.log", Class: event.NoticeMissing, Text: "cannot open '/var/log/fd/sim.log' for reading: No such file or directory"})
	add(5.2, event.LogFollowError{Path: "/var/log/fd/sim.log", Err: "connection lost", Retry: 2 * time.Second})
	add(6, event.Throughput{TokPerSec: 1523.47, AcceptLength: 3.52, AcceptRate: 0.71, TokenUsage: 0.43, Tokens: 81234, Running: 64, Queued: 3, CUDAGraph: true,
		Has:  event.HasAcceptLength | event.HasRunning | event.HasQueued | event.HasCUDAGraph | event.HasTokenUsage | event.HasTokens,
		Rank: "DP1 TP0", DP: 1, Engine: -1, Server: "sglang", Stamp: "2026-11-29 21:58:14", Line: 0})
	add(6.01, event.Throughput{TokPerSec: 88.2, PromptTokPerSec: 1200.5, Has: event.HasPromptTokPerSec, DP: -1, Engine: 0, Server: "vllm"})
	add(7, event.TokRate{TokPerSec: 1523.47, Ranks: 2})
	add(7.5, event.TokRate{TokPerSec: 0.4, Ranks: 1, Dropped: true})
	add(8, event.TokRate{TokPerSec: 880, AcceptLength: 3.5, HasAccept: true, Ranks: 8})
	add(8.5, event.TokRate{TokPerSec: 0, AcceptLength: 2, Ranks: 0})
	add(8.6, event.TokRate{TokPerSec: math.Inf(1), Ranks: 1})
	add(9, event.Prefill{NewSeq: 4, NewTokens: 8192, CachedTokens: 1024, CacheHitRatePct: 12.5, TokenUsage: 0.2, Running: 10, Queued: 2, InputTokPerSec: 30211.4, CUDAGraph: true, Has: event.HasNewTokens | event.HasCachedTokens, Rank: "TP0", DP: -1, Stamp: "x"})
	add(10, event.SpecDecode{MeanAcceptLength: 3.1, DraftAcceptRate: 0.607, Accepted: 32594, Drafted: 53716, NumSpecTokens: 4, PerPosition: []float64{0.9, 0.7, 0.5}, Has: 7, Engine: -1})
	add(11, event.LogBench{Tool: serverlog.ToolSGLangBenchServing, Backend: "sglang", OutputTokPerSec: 1466.2, RequestRate: math.Inf(1), TTFTP99Ms: 812.5, DecodeTokPerSec: []float64{1, 2}, Has: serverlog.HasRequestRate | serverlog.HasOutputTokPerSec})
	add(11.5, event.LogBench{Tool: serverlog.ToolVLLMBenchServe, RequestRate: 4})
	add(12, event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!", URL: "http://0.0.0.0:30000", Line: 120})
	add(13, event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory", Rank: "TP3", Line: 9})
	add(14, event.ServerStatus{Phase: event.PhaseReady, Server: "sglang", PID: 4123, How: server.ByPidfile, Preset: "sim", Profile: "baseline", LogPath: "/var/log/x.log", Port: 30000, Since: at(14), LaunchedAt: at(1), ReadyAfter: 13 * time.Second, Exit: -1, Health: "/health"})
	add(15, event.ServerLaunched{Record: event.LaunchRecord{PID: 4100, PGID: 4100, SID: 4100, StartTime: 123456789, Launch: launch}})
	rec := event.LaunchRecord{PID: 4100, Launch: launch}
	add(16, event.ServerObserved{Found: event.ServerFound{Record: &rec, PidfileErr: errors.New("pidfile: unexpected end of JSON input"), Running: true, How: server.ByPidfile,
		Target: event.KillTarget{PID: 4100, StartTime: 99, PGID: 4100, SID: 4100, Keep: []event.Process{{PID: 4200, PPID: 1, State: "S", Comm: "python3"}}},
		Tree:   []event.Process{{PID: 4123, PPID: 4100, PGID: 4100, SID: 4100, State: "R", StartTime: 100, Comm: "sglang::schedu"}}, ServerPID: 4123, Exit: -1, Port: 30000}})
	add(16.5, event.ServerObserved{Found: event.ServerFound{Exit: 3}})
	add(17, event.ServerHealthy{Port: 30000, Path: "/health"})
	add(18, event.KillStep{Step: "failed", PID: 4123, Detail: "SIGKILL after 10s: 4711", Err: fmt.Errorf("kill: %w", errors.New("GPU memory still held"))})
	add(18.5, event.KillStep{Step: "done", PID: 4123})
	add(19, event.RepoHead{Path: "/srv/sglang", Commit: strings.Repeat("ab", 20), Short: "abababa", Subject: "Fix PCG MoE Error", Branch: "main", CommitTime: at(-86400), Dirty: 2, Entries: []string{" M python/sglang/srt/server.py", "?? notes.txt"}})
	add(20, event.RepoUnreadable{Path: "/srv/none", Err: "not a git repository"})
	add(21, event.GitStatus{Path: "/srv/sglang", Branch: "main", Head: event.Commit{ID: strings.Repeat("cd", 20), Short: "cdcdcdc", Subject: "s", Author: "Priya", Time: at(-5), Refs: []string{"HEAD -> main"}},
		Upstream: "origin/main", Ahead: 1, Behind: 2, Files: []event.GitFile{{Path: "a.py", X: 'M', Y: ' ', Added: 3, Deleted: 1}, {Path: "bin", X: '?', Y: '?', Added: -1, Deleted: -1, Binary: true}},
		Stashes: []event.Stash{{Index: 0, ID: "ef", Message: "On main: x", Time: at(-60)}}, Reflog: []event.RefEntry{{ID: "cd", Short: "cd", Action: "pull", Message: "pull: Fast-forward", Time: at(-30)}}, Read: at(21)})
	add(22, event.GitAction{Op: "checkout", Args: []string{"3207427"}, Snapshot: "20261129-215807-3f9a", From: "aa", To: "bb", Branch: "", Conflict: []string{"x.py"}, Output: "HEAD is now at 3207427", Notes: []string{"detached"}, Files: []string{"python/sglang/srt/pynccl.py"}, FilesTotal: 1, Started: at(21.9), Took: 1500 * time.Millisecond})
	add(23, event.GitMoved{From: "aa", To: "bb", FromShort: "aa", ToShort: "bb", FromBranch: "main", Action: "pull", Forward: 3, Files: []string{"a.py"}, FilesTotal: 1, DirtyBefore: 1, DirtyAfter: 0, DirtyChanged: []string{"a.py"}, At: at(23)})
	add(24, event.ConnState{Host: "root@10.1.2.3:22", Conn: event.Reconnecting, Attempt: 3, Err: fmt.Errorf("dial: %w", errors.New("connection refused")), Since: at(23), NextTry: at(26)})
	add(25, event.Note{Text: "NCCL_ALGO=Ring regressed TP=8 decode?\nsecond line", Exp: "e1"})
	add(26, event.ExperimentStart{ID: "e1", Name: "nccl-ll-ring @ 3207427", Hypothesis: "Ring is slower", Trigger: "launch", Launch: &launch})
	add(27, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{At: at(26), Hostname: "gpu-box", Kernel: "6.8.0", Git: &event.GitState{Repo: "/srv/sglang", Head: "aa", Patch: "diff --git a/x b/x\n+\x1b[31m", PatchSHA256: "00", PatchBytes: 20},
		Launch: &launch, CommandLine: "python3 -m sglang.launch_server", Versions: []event.Version{{Name: "driver", Command: "nvidia-smi ...", Value: "590.48.01", Millis: 40}, {Name: "torch", Command: "python -c ...", Err: "timed out after 10s", Millis: 10000}},
		GPUs: []event.GPU{eventtest.GPU(0, 0), odd}, Errors: []string{"hostname: timed out after 10s"}}})
	add(28, event.ExperimentUpdate{Exp: "e1", Conclusion: "yes"})
	add(29, event.ExperimentEnd{Exp: "e1", Trigger: "kill", Conclusion: "Ring -6 %", Result: event.ExperimentResult{Metric: "tok/s", Samples: []float64{89, 82, 94}, N: 3, Dropped: 2, Median: 89, Lo: f64(82), Hi: f64(94), Confidence: 0.96, Warnings: []string{"few"}}, GPUs: []event.GPU{eventtest.GPU(1, 9)}})
	add(30, event.Key{Key: "K", Action: "kill sglang pid 4123"})
	add(31, event.Session{SessionHeader: event.SessionHeader{Format: FormatName, Version: FormatVersion, Created: t0.Add(31 * time.Second), Flightdeck: "v0.6.0",
		Host: "gpu-box", Name: "after-crash", User: "ana", Hostname: "laptop", PID: 4243}})
	add(-2.5, event.Note{Text: "an event from before the journal was created"})
	add(32, event.Baseline{Exp: "e1"})
	add(32.5, event.Baseline{})
	add(33, event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 5})
	cfg := event.BenchConfig{Endpoint: event.BenchChat, Model: "llama \"70b\"", InputLen: 128, OutputLen: 256, Concurrency: 8, Duration: 90 * time.Second, Rate: math.Inf(1), Poisson: true, Warmup: 1, Seed: 1<<64 - 1, Timeout: 10 * time.Minute}
	add(34, event.BenchStarted{ID: "b1", Exp: "e2", Target: "http://127.0.0.1:30000 via gpu-box", Config: cfg})
	add(35, event.BenchDone{ID: "b1", Exp: "e2", Err: "connect: connection refused"})
	res := benchResultFixture(cfg)
	add(36, event.BenchDone{ID: "b2", Exp: "e2", Result: &res})
	add(37, event.BenchDone{ID: "b3", Result: &event.BenchResult{Cancelled: true, ReqPerSec: math.NaN(), OutputTokPerSec: math.Inf(-1), TTFT: event.Dist{Mean: math.NaN()}}})
	add(38, event.DriverState{Host: "root@gpu-box:22", Role: event.RoleWatching, Holder: event.DriverInfo{User: "alice", Machine: "laptop", PID: 4123, Since: at(2), Heartbeat: at(37.5), Journal: "/root/.flightdeck/journals/s.jsonl", Token: "0123abcd"},
		Note: "alice@laptop took over at 10:15:02", Err: "read lock: connection to host lost"})
	add(38.5, event.DriverState{Host: "local", Role: event.RoleDriving, Holder: event.DriverInfo{User: "bob", Machine: "desk", PID: 1, Since: at(38.5), Token: "ff"}})
	add(39, event.DriverState{})
	add(39.2, event.HostState{Host: "gpu-box", Fingerprint: event.Fingerprint{At: at(39.1), Hostname: "gpu-box", Kernel: "6.8.0",
		Git:  &event.GitState{Repo: "/srv/sglang", Head: "e7b9c70e", Branch: "main"},
		GPUs: []event.GPU{{Index: 0, Name: event.Text{S: "NVIDIA H200"}, PCIeGenMax: event.Reading{Value: 5}}}}})
	add(39.3, event.HostChanges{Host: "gpu-box", Repo: "/srv/sglang", Seen: true, Since: at(1), Journal: "/j/a.jsonl", Exp: "e2",
		Changes: []event.HostChange{{Group: "git", Name: "HEAD", Was: "a6d51c0", Now: "e7b9c70", How: []string{"pull"},
			Range: &event.CommitRange{From: "a6d51c0", To: "e7b9c70", AheadTotal: 3}, Detail: []string{"pull: Fast-forward"}}},
		Errs: []string{"reflog: timed out"}})
	add(39.4, event.HostChanges{Host: "local"})
	add(39.5, event.BisectStart{ID: "b1", Good: "a6d51c0", Bad: "origin/main", Metric: "tok/s", Launches: 2, MaxLaunches: 10, MaxFailures: 3, Alpha: 0.01, Noise: 0.004,
		Commits: []event.BisectCommit{{ID: "a6d51c0c6f1e", Short: "a6d51c0", Subject: "Baseline", Author: "Ann", Date: at(-3600).UTC()},
			{ID: "65b09bfe", Short: "65b09bf", Subject: "Fix PCG MoE Error", Files: []string{"pynccl.py"}, FilesTotal: 2}},
		Launch: &event.LaunchInfo{Preset: "sim", Profile: "nccl-ll-ring", Argv: []string{"sglang", "--tp", "8"}},
		Origin: event.BisectOrigin{Head: "e7b9c70", Branch: "main", Dirty: true, Snapshot: "s3"}})
	add(39.6, event.BisectLaunch{ID: "b1", Commit: "65b09bfe", Exp: "e4", Value: 81.9, Took: 12 * time.Second})
	add(39.7, event.BisectLaunch{ID: "b1", Commit: "65b09bfe", Failed: "oom", Why: "CUDA out of memory"})
	add(39.8, event.BisectEnd{ID: "b1", Outcome: event.BisectCulprit, Culprit: "65b09bfe", Suspects: []string{"65b09bfe"}, Why: "8.0 % slower", Restored: "main at e7b9c70"})
	add(39.81, event.EngineSample{Engine: "sglang", Port: 30000, Has: event.HasEngineRunning | event.HasEngineQueued | event.HasEngineKVUsage | event.HasEngineAcceptLength | event.HasEngineTTFT,
		Running: 12, Queued: 3, KVUsage: 0.41, AcceptLength: 2.31, TTFTMean: 0.084, TTFTP50: 0.071, TTFTP99: 0.52, TTFTCount: 17})
	add(39.82, event.EngineSample{Engine: "vllm", Port: 8000, Has: event.HasEnginePerPosition | event.HasEngineAcceptRate, AcceptRate: 0.62, PerPosition: []float64{0.81, 0.6, 0.45}})
	add(39.83, event.EngineEndpoint{State: event.EngineMetricsOff, Engine: "sglang", Port: 30000, Path: "/metrics", Reason: "404 Not Found", Hint: "start SGLang with --enable-metrics"})
	add(39.84, event.Topology{GPUs: 2, Devices: []event.TopoDevice{{Name: "GPU0", CPUAffinity: "0-47", NUMAAffinity: "0", GPUNUMAID: "N/A"}, {Name: "GPU1", CPUAffinity: "48-95", NUMAAffinity: "1"}, {Name: "NIC0", Port: "mlx5_0"}},
		Links: [][]event.TopoLink{{{Link: event.LinkSelf, Token: "X"}, {Link: event.LinkNVLink, NVLinks: 18, Token: "NV18"}, {Link: event.LinkPXB, Token: "PXB"}},
			{{Link: event.LinkNVLink, NVLinks: 18, Token: "NV18"}, {Link: event.LinkSelf, Token: "X"}, {Link: event.LinkUnknown, Token: "QPX"}},
			{{Link: event.LinkPXB, Token: "PXB"}, {Link: event.LinkSYS, Token: "SYS"}, {Link: event.LinkSelf, Token: "X"}}},
		NVLink: []event.GPULinks{{Index: 0, UUID: "GPU-0", Links: []event.NVLinkState{{Link: 0, Active: true, GBPerSec: 26.562}, {Link: 1}}}}})
	add(39.85, event.Topology{Err: "topo -m: line 4: 7 cells for 9 columns", NVLinkNote: "Nvlink queries are not supported for Devices in MIG mode"})
	add(39.86, event.NCCL{Version: "2.21.5+cuda12.4", Env: map[string]string{"NCCL_P2P_LEVEL": "SYS"}, Rings: 2, Trees: 2, Protocols: "LL", Algorithms: "Ring",
		Paths:    []event.NCCLPath{{Channel: 0, Channels: 2, FromRank: 0, FromGPU: 0, ToRank: 1, ToGPU: 1, Transport: "P2P/IPC", Line: "x Channel 00/02 : 0[0] -> 1[1] via P2P/IPC"}},
		Warnings: []string{"NCCL_P2P_LEVEL=SYS forces P2P across the SMP link"}})
	add(39.87, event.KernelLog{Readable: true, Via: "journalctl -k", Xids: 2})
	add(39.88, event.KernelLog{Reason: "dmesg: read kernel buffer failed: Operation not permitted"})
	add(39.89, event.Xid{Index: 2, BusID: "00000000:2B:00.0", Code: 79, Source: event.XidFromKernel, KernelTime: at(-7200).UTC(), Uptime: 74889.644138,
		Boot: "6b1f3c6e-boot", PID: 13705, Process: "python3", Message: "GPU has fallen off the bus."})
	add(0.1, event.GPUSource{Mode: event.SourceNVML, Detail: "NVML 12.550.54.15, driver 550.54.15"})
	add(40, event.Xid{Index: 3, UUID: "GPU-3f1c0003-8a7b-4c2d-9e0f-1a2b3c4d5e6f", BusID: "00000000:48:00.0", Code: 79})
	add(40.5, event.Xid{Index: -1, Code: 1<<64 - 1})
	add(41, event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "host is linux/arm64, this binary linux/amd64 \"x\""})
	for _, e := range nvmlSamples(at) {
		add(e.at, e.s)
	}
	return evs
}

// nvmlSample is one sample of nvmlSamples at event time at (seconds).
type nvmlSample struct {
	at float64
	s  event.GPUSample
}

// nvmlSamples are NVML samples (issue 8: PCIe throughput, per-process
// memory) from 125 s on, after the samples above: a keyframe with Apps,
// Apps equal to the keyframe's, one changed, all new (a relaunch: made a
// keyframe), none (empty, not nil), nil, one of the keyframe's and one
// new with PCIe back to Absent, and a row whose every first field changes
// but whose PCIe throughput does not.
func nvmlSamples(at func(float64) time.Time) []nvmlSample {
	apps := []event.ComputeApp{
		{PID: 4123, Name: event.Text{S: "python3"}, UsedMiB: ok(80123), BusID: event.Text{S: "00000000:18:00.0"}, UUID: event.Text{S: "GPU-3f1c0000-8a7b-4c2d-9e0f-1a2b3c4d5e6f"}},
		{PID: 4124, Name: event.Text{S: "sglang::scheduler \"TP1\" é"}, UsedMiB: ok(80100.5), BusID: event.Text{S: "00000000:28:00.0"}, UUID: event.Text{S: "GPU-3f1c0001-8a7b-4c2d-9e0f-1a2b3c4d5e6f"}},
		{PIDStatus: event.CellNotSupported, Name: event.Text{S: "[Not Supported]", Status: event.CellNotSupported}, UsedMiB: event.Reading{Status: event.CellNA, Raw: "[N/A]"},
			BusID: event.Text{S: "00000000:28:00.0"}, UUID: event.Text{Status: event.CellAbsent}},
	}
	sample := func(t float64, tick int, apps []event.ComputeApp) nvmlSample {
		s := testSample(at(t), tick, 2)
		for i := range s.GPUs {
			s.GPUs[i].PCIeRxKBs, s.GPUs[i].PCIeTxKBs = ok(float64(1200+i)), ok(float64(340*tick))
		}
		s.Apps = apps
		return nvmlSample{t, s}
	}
	var out []nvmlSample
	out = append(out, sample(125, 0, apps))                 // keyframe: every app whole
	out = append(out, sample(125.5, 1, slices.Clone(apps))) // the keyframe's apps
	changed := slices.Clone(apps)
	changed[1].UsedMiB = ok(81000)
	out = append(out, sample(126, 2, changed)) // references and the changed app whole
	relaunched := slices.Clone(apps)
	for i := range relaunched {
		relaunched[i].PID += 1000
	}
	out = append(out, sample(126.5, 3, relaunched)) // every process new: a keyframe
	out = append(out, sample(127, 4, []event.ComputeApp{}))
	out = append(out, sample(127.5, 5, nil))
	s := sample(128, 6, append(relaunched[:1:1], event.ComputeApp{PID: 5000, Name: event.Text{S: "nccl-tests"}, UsedMiB: ok(0), BusID: event.Text{S: "00000000:18:00.0"}, UUID: event.Text{S: "GPU-x"}}))
	s.s.GPUs[1].PCIeRxKBs = event.Reading{Status: event.CellAbsent}
	s.s.GPUs[0].PCIeTxKBs = event.Reading{Status: event.CellNotSupported, Raw: "[Not Supported]"}
	out = append(out, s)
	s = sample(128.5, 3, nil)
	g := &s.s.GPUs[1]
	*g = event.GPU{Index: 1, Name: event.Text{S: "NVIDIA A100-SXM4-80GB"}, BusID: event.Text{S: "00000000:07:00.0"}, UUID: event.Text{S: "GPU-other"},
		UtilGPUPct: ok(1), UtilMemPct: ok(2), MemUsedMiB: ok(3), MemTotalMiB: ok(81920), PowerDrawW: ok(61.5), PowerLimitW: ok(400), TempC: ok(31),
		SMClockMHz: ok(210), MemClockMHz: ok(1593), SMClockMax: ok(1410), FanPct: ok(0), PState: event.Text{S: "P8"},
		PCIeGenCurrent: ok(1), PCIeGenMax: ok(4), PCIeWidthCurrent: ok(8), PCIeWidthMax: ok(8), ClockEvents: event.ClockEvents{Mask: event.ReasonGPUIdle},
		Persistence: event.Text{S: "Disabled"}, ECCMode: event.Text{S: "Disabled"}, MIGMode: event.Text{S: "Enabled"}, Lost: true,
		PCIeRxKBs: ok(1201), PCIeTxKBs: ok(1020)} // PCIe as in the keyframe
	out = append(out, s)
	return out
}

// benchResultFixture is a finished run with awkward values: a failed
// request, a start past 2^53 ns, a negative zero, long fractions.
func benchResultFixture(cfg event.BenchConfig) event.BenchResult {
	return event.BenchResult{Config: cfg, Target: "http://127.0.0.1:30000", Started: t0.Add(36 * time.Second), Duration: 12*time.Second + 345678901,
		Completed: 3, Failed: 1, Errors: []event.BenchErrorCount{{Err: "HTTP 503: The server is not ready.", Count: 1}},
		InputTokens: 384, OutputTokens: 768, ReqPerSec: 0.24271844660194175, OutputTokPerSec: 62.13592233009709, TotalTokPerSec: 93.2,
		Concurrency: 0.9999999999999999,
		TTFT:        event.Dist{N: 3, Mean: 41.2, Median: 40.123456789, P90: 44.1, P99: 44.91, Std: 1.5, Max: 45},
		ITL:         event.Dist{N: 762, Mean: 16.0, Median: 15.9, P90: 17.2, P99: 19.8, Std: 0.7, Max: 31.4},
		TPOT:        event.Dist{N: 3, Mean: 16.01, Median: 16, P90: 16.1, P99: 16.12, Std: 0.05, Max: 16.13},
		E2E:         event.Dist{N: 3, Mean: 4120, Median: 4111.5, P90: 4200, P99: 4210, Std: 40, Max: 4211},
		Requests: []event.BenchRequest{
			{Start: 0, TTFT: 40.123456789, E2E: 4111.5, TPOT: 15.964, ITLMedian: 15.9, PromptTokens: 128, OutputTokens: 256, Usage: true},
			{Start: 1<<53 + 1, TTFT: 1e-9, E2E: 4200, TPOT: math.Copysign(0, -1), ITLMedian: 1e300, PromptTokens: 128, OutputTokens: 256},
			{Start: 2 * time.Second, TTFT: 44.1, E2E: 4050, TPOT: 15.7, ITLMedian: 15.8, PromptTokens: 128, OutputTokens: 256, Usage: true},
			{Start: 3 * time.Second, E2E: 2.5, Err: "HTTP 503: The server is not ready. \"模型\"\n"},
		}}
}

// writeJournal writes evs to a new journal (created t0, host gpu-box) in a
// temporary directory and returns its path.
func writeJournal(t testing.TB, evs []event.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeJournalFile(t, path, event.SessionHeader{Created: t0, Host: "gpu-box", Flightdeck: "test"}, evs)
	return path
}

// writeJournalFile creates the journal at path with header h, writes evs
// to it and closes it; any error fails the test.
func writeJournalFile(t testing.TB, path string, h event.SessionHeader, evs []event.Event) {
	t.Helper()
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatalf("write %s: %v", e.Data.Kind(), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// createJournal creates an empty journal (created t0) in a temporary
// directory and returns its path and its open writer.
func createJournal(t testing.TB) (string, *Writer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	w, err := Create(path, event.SessionHeader{Created: t0})
	if err != nil {
		t.Fatal(err)
	}
	return path, w
}

func readAll(t testing.TB, path string) []event.Event {
	t.Helper()
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var out []event.Event
	if err := j.Scan(func(e event.Event) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if p := j.Problems(); p.Any() {
		t.Errorf("problems: %s", p)
	}
	return out
}

func TestRoundTripEveryKind(t *testing.T) {
	evs := roundTripEvents()
	seen := map[string]bool{}
	for _, e := range evs {
		seen[e.Data.Kind().String()] = true
	}
	for _, k := range Kinds() {
		if !seen[k] {
			t.Errorf("kind %s has no round-trip case", k)
		}
	}
	path := writeJournal(t, evs)
	got := readAll(t, path)
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i := range evs {
		if d := diffPayload(evs[i].Data, got[i].Data); d != "" {
			t.Errorf("event %d (%s): %s", i, evs[i].Data.Kind(), d)
		}
		if d := evs[i].At.Sub(got[i].At); d >= time.Microsecond || d <= -time.Microsecond {
			t.Errorf("event %d (%s): at %s, want %s", i, evs[i].Data.Kind(), got[i].At, evs[i].At)
		}
	}
	if testing.Verbose() {
		b, _ := os.ReadFile(path)
		t.Logf("%s", b)
	}
}

// Every kind the cockpit publishes is in the format: the list below is the
// event vocabulary's kind table less its screen-only kinds
// (journal-status, bench-progress, repeat-progress), and every kind has a
// codec unless it is screen-only.
func TestKindsTable(t *testing.T) {
	want := []string{"gpu-sample", "gpu-failure", "gpu-stale", "gpu-xid", "gpu-source", "log-lines", "log-reset", "log-notice", "log-follow-error",
		"throughput", "tok-rate", "prefill", "spec-decode", "bench-result", "server-ready", "server-failure", "server-status",
		"server-launched", "server-observed", "server-healthy", "server-kill", "repo-head", "repo-unreadable", "git-status",
		"git-action", "git-moved", "conn-state", "note", "exp-start", "exp-fingerprint", "exp-update", "exp-end", "key", "session",
		"exp-baseline", "exp-repeat", "bench-start", "bench-done", "driver", "host-state", "host-changes",
		"bisect-start", "bisect-launch", "bisect-end", "engine-sample", "engine-endpoint", "topology", "nccl", "kernel-log"}
	got := Kinds()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	for _, k := range event.Kinds() {
		if screen, coded := k.Info().ScreenOnly, codecOf(k) != nil; screen == coded {
			t.Errorf("kind %s: screen-only %v, codec %v", k, screen, coded)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "j.jsonl"), event.SessionHeader{Created: t0})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Payload is sealed: a kind outside the vocabulary cannot be written,
	// and TestKindsTable checks that every kind in it is coded or
	// screen-only; an event without a payload is the one left to refuse.
	if err := w.Write(event.Event{At: t0}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("no payload: %v", err)
	}
	for _, p := range []event.Payload{event.JournalStatus{Path: "x"}, event.BenchProgress{ID: "b1", Done: 3}, event.RepeatProgress{}} {
		if err := w.Write(event.Event{At: t0, Data: p}); err != nil {
			t.Errorf("%s: %v, want it skipped", p.Kind(), err)
		}
	}
	if err := w.Write(event.Event{At: t0, Data: event.SpecDecode{MeanAcceptLength: math.NaN()}}); err == nil {
		t.Errorf("NaN in a JSON-coded payload was accepted")
	}
	if st := w.Status(); st.Pending != 0 {
		t.Errorf("refused events left %d bytes pending", st.Pending)
	}
}

func TestMicros(t *testing.T) {
	for _, c := range []struct {
		in   micros
		want string
	}{{0, "0"}, {1, "0.000001"}, {500000, "0.5"}, {12345678, "12.345678"}, {-2500000, "-2.5"}, {86399999875, "86399.999875"}, {3e6, "3"}} {
		got := string(appendMicros(nil, c.in))
		if got != c.want {
			t.Errorf("appendMicros(%d) = %s, want %s", c.in, got, c.want)
		}
		back, ok := parseMicros([]byte(got))
		if !ok || back != c.in {
			t.Errorf("parseMicros(%s) = %d, %v", got, back, ok)
		}
	}
	for in, want := range map[string]micros{"1e3": 1e9, "0.0000004": 0, "0.0000006": 1, "1.5000000": 1500000, "-0": 0, "-9223372036.854775": -9223372036854775} {
		if got, ok := parseMicros([]byte(in)); !ok || got != want {
			t.Errorf("parseMicros(%s) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-", "1.", ".5", "\"1\"", "1x", "nan", "1e400", "9223372036854.776", "-1e13", "99999999999999999"} {
		if _, ok := parseMicros([]byte(in)); ok {
			t.Errorf("parseMicros(%q) accepted", in)
		}
	}
}

// An event with a zero time (a producer's bug) is kept, at the earliest
// time the format can say.
func TestZeroEventTime(t *testing.T) {
	got := readAll(t, writeJournal(t, []event.Event{{Data: event.Note{Text: "no time"}}, {At: t0, Data: event.Note{Text: "ok"}}}))
	if len(got) != 2 || got[0].Data.(event.Note).Text != "no time" {
		t.Fatalf("%v", got)
	}
}

// TestLaunchSecretsNeverReachTheFile: a launch record's secret env values
// and argv values (server.RedactLaunch) are redacted when written, in
// server-launched and in the pidfile record of server-observed.
func TestLaunchSecretsNeverReachTheFile(t *testing.T) {
	path, w := createJournal(t)
	rec := event.LaunchRecord{PID: 7, Launch: event.LaunchInfo{
		Argv: []string{"python3", "-m", "sglang.launch_server", "--api-key", "sk-live-123", "--hf-token=hf_abc", "--tp-size", "8"},
		Env:  map[string]string{"HF_TOKEN": "hf_def", "AWS_SECRET_ACCESS_KEY": "aws_ghi", "NCCL_PROTO": "LL"},
	}}
	for _, p := range []event.Payload{event.ServerLaunched{Record: rec}, event.ServerObserved{Found: event.ServerFound{Running: true, Record: &rec}}} {
		if err := w.Write(event.Event{At: t0, Data: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-live-123", "hf_abc", "hf_def", "aws_ghi"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the journal holds %q:\n%s", secret, b)
		}
	}
	for _, kept := range []string{`"--tp-size","8"`, `"NCCL_PROTO":"LL"`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("the journal lost %s:\n%s", kept, b)
		}
	}
	if rec.Launch.Argv[4] != "sk-live-123" {
		t.Error("writing redacted the caller's record")
	}
}

// TestToMicrosRoundsUp: event times are rounded up to the microsecond,
// so a replayed event is never earlier than the times its payload holds.
func TestToMicrosRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want micros
	}{{0, 0}, {1, 1}, {999, 1}, {1000, 1}, {1001, 2}, {1500 * time.Millisecond, 1500000}, {-1, 0}, {-1000, -1}, {-1999, -1}} {
		if got := toMicros(t0.Add(c.d), t0); got != c.want {
			t.Errorf("toMicros(+%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestDecRateForms: the tok-rate forms the encoder writes decode; a fifth
// element other than 0 (the encoder writes nothing else there) is refused.
func TestDecRateForms(t *testing.T) {
	for in, want := range map[string]event.TokRate{
		`[1523.4,2]`:       {TokPerSec: 1523.4, Ranks: 2},
		`[0.4,1,1]`:        {TokPerSec: 0.4, Ranks: 1, Dropped: true},
		`[880,8,0,3.52]`:   {TokPerSec: 880, Ranks: 8, AcceptLength: 3.52, HasAccept: true},
		`[880,8,0,3.52,0]`: {TokPerSec: 880, Ranks: 8, AcceptLength: 3.52},
	} {
		got, err := decRate(nil, t0, []byte(in))
		if err != nil || got != want {
			t.Errorf("decRate(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{`[880,8,0,3.52,7]`, `[1]`, `[1,2,3]`, `[1,2,0,3,0,0]`} {
		if p, err := decRate(nil, t0, []byte(in)); err == nil {
			t.Errorf("decRate(%s) = %+v, want an error", in, p)
		}
	}
}

// TestExperimentGPUsWithNonFiniteValues: an experiment's end whose GPU
// rows hold NaN or ±Inf (only a broken agent sends them) is written, with
// those readings invalid, rather than failing to encode and losing the
// experiment's end; the event published is not changed.
func TestExperimentGPUsWithNonFiniteValues(t *testing.T) {
	g := event.GPU{Index: 0, PowerDrawW: event.Reading{Value: math.NaN()}, TempC: event.Reading{Value: 61}, SMClockMHz: event.Reading{Value: math.Inf(1)}}
	end := event.ExperimentEnd{Exp: "e1", Trigger: "key", GPUs: []event.GPU{g}}
	path := writeJournal(t, []event.Event{{At: time.Unix(1_800_000_000, 0), Data: end}})
	got := readAll(t, path)
	if len(got) != 1 {
		t.Fatalf("read %d events, want the experiment's end", len(got))
	}
	e, ok := got[0].Data.(event.ExperimentEnd)
	if !ok || len(e.GPUs) != 1 {
		t.Fatalf("read %+v", got[0].Data)
	}
	r := e.GPUs[0]
	if r.PowerDrawW != (event.Reading{Status: event.CellInvalid, Raw: "NaN"}) || r.SMClockMHz != (event.Reading{Status: event.CellInvalid, Raw: "+Inf"}) || r.TempC != (event.Reading{Value: 61}) {
		t.Errorf("GPU row read back %+v %+v %+v", r.PowerDrawW, r.SMClockMHz, r.TempC)
	}
	if !math.IsNaN(end.GPUs[0].PowerDrawW.Value) {
		t.Error("encoding changed the published event's row")
	}
}
