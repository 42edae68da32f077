package sim

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// The simulated failures print what SGLang prints. Every line below is in
// a shape taken from a real log (the fixtures in testdata/, named in each
// comment): the scheduler's "Scheduler hit an exception: Traceback" block,
// Python 3.10 frames (no caret lines), the exception text, and the parent's
// "Received sigquit from a child process" line. Only the numbers and the
// installation paths are the sim's.

// errSimFailed ends start-up after a simulated failure has been logged.
var errSimFailed = errors.New("simulated failure")

// pyFrame is one frame of a Python traceback.
type pyFrame struct {
	file string
	line int
	fn   string
	src  string
}

// torchRoot is where the sim host's torch is installed.
const torchRoot = "/usr/local/lib/python3.10/dist-packages/torch"

// sglangRoot is the sglang package the tracebacks point into: the
// simulated checkout when the server runs from one, else the path of
// SGLang's docker image (sglang#3713).
func (s *server) sglangRoot() string {
	if s.opt.repo != "" {
		if abs, err := filepath.Abs(s.opt.repo); err == nil {
			return filepath.Join(abs, "python", "sglang")
		}
	}
	return "/sgl-workspace/sglang/python/sglang"
}

// schedulerInitFrames are the frames from a scheduler process down to
// ModelRunner.__init__ (sglang#8864, sglang-crash-startup-oom-2025-08.txt).
func schedulerInitFrames(sg string) []pyFrame {
	return []pyFrame{
		{sg + "/srt/managers/scheduler.py", 2534, "run_scheduler_process", "scheduler = Scheduler("},
		{sg + "/srt/managers/scheduler.py", 313, "__init__", "self.tp_worker = TpWorkerClass("},
		{sg + "/srt/managers/tp_worker_overlap_thread.py", 67, "__init__", "self.worker = TpModelWorker("},
		{sg + "/srt/managers/tp_worker.py", 84, "__init__", "self.model_runner = ModelRunner("},
	}
}

// failTraceback logs a scheduler exception on rank r and the main
// process's reaction, in one block.
func (s *server) failTraceback(r int, frames []pyFrame, exc ...string) {
	lines := []string{s.log.stamp(s.rankTag(r), "Scheduler hit an exception: Traceback (most recent call last):")}
	for _, f := range frames {
		lines = append(lines, fmt.Sprintf(`  File "%s", line %d, in %s`, f.file, f.line, f.fn), "    "+f.src)
	}
	lines = append(lines, exc...)
	lines = append(lines, "", s.log.stamp("", "Received sigquit from a child process. It usually means the child failed."))
	s.log.block(lines)
}

// torchSize formats bytes like torch's format_size (CUDACachingAllocator).
func torchSize(b int64) string {
	switch {
	case b <= 1024:
		return strconv.FormatInt(b, 10) + " bytes"
	case b <= 1<<20:
		return fmt.Sprintf("%.2f KiB", float64(b)/(1<<10))
	case b <= 1<<30:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// foreignMiB is GPU memory held by a process other than this server's.
type foreignMiB struct {
	pid    int
	memMiB int64
}

// logOOM logs torch's CUDA OOM while rank r initialises the model's weights
// (frames from sglang#8864; the message as torch ≥ 2.6 words it,
// vllm-oom-v1-enginecore.txt, with a "Process PID has …" clause per other
// process on the GPU, as torch lists them from NVML).
func (s *server) logOOM(r int, usedMiB, askMiB int64, others []foreignMiB) {
	const mib = 1 << 20
	capMiB := int64(gpuCapMiB)
	freeMiB := capMiB - usedMiB
	for _, o := range others {
		freeMiB -= o.memMiB
	}
	freeMiB = max(freeMiB, 17)
	var procs strings.Builder
	for _, o := range others {
		fmt.Fprintf(&procs, "Process %d has %s memory in use. ", o.pid, torchSize(o.memMiB*mib))
	}
	alloc := max(usedMiB-ctxMiB-37, 0) // the CUDA context is not PyTorch's; 37 MiB cached, unallocated
	msg := fmt.Sprintf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "+
		"%sIncluding non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated. "+
		"If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "+
		"See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
		torchSize(askMiB*mib), r, torchSize(capMiB*mib), torchSize(freeMiB*mib),
		procs.String(), torchSize(usedMiB*mib), torchSize(alloc*mib), torchSize(37*mib))
	sg := s.sglangRoot()
	frames := append(schedulerInitFrames(sg),
		pyFrame{sg + "/srt/model_executor/model_runner.py", 244, "__init__", "self.initialize(min_per_gpu_memory)"},
		pyFrame{sg + "/srt/model_executor/model_runner.py", 287, "initialize", "self.load_model()"},
		pyFrame{sg + "/srt/model_executor/model_runner.py", 647, "load_model", "self.model = get_model("},
		pyFrame{sg + "/srt/model_loader/__init__.py", 22, "get_model", "return loader.load_model("},
		pyFrame{sg + "/srt/model_loader/loader.py", 381, "load_model", "model = _initialize_model("},
		pyFrame{sg + "/srt/model_loader/loader.py", 158, "_initialize_model", "return model_class("},
		pyFrame{torchRoot + "/utils/_device.py", 104, "__torch_function__", "return func(*args, **kwargs)"},
	)
	s.failTraceback(r, frames, msg)
}

// logNCCLError logs pynccl's communicator set-up failing on rank r
// (sglang#4289, sglang-nccl-unhandled-system-error-tail-2025-03.txt).
func (s *server) logNCCLError(r int) {
	sg := s.sglangRoot()
	frames := append(schedulerInitFrames(sg),
		pyFrame{sg + "/srt/model_executor/model_runner.py", 236, "__init__", "min_per_gpu_memory = self.init_torch_distributed()"},
		pyFrame{sg + "/srt/model_executor/model_runner.py", 520, "init_torch_distributed", "initialize_model_parallel("},
		pyFrame{sg + "/srt/distributed/parallel_state.py", 1100, "initialize_model_parallel", "_TP = init_model_parallel_group("},
		pyFrame{sg + "/srt/distributed/parallel_state.py", 927, "init_model_parallel_group", "return GroupCoordinator("},
		pyFrame{sg + "/srt/distributed/parallel_state.py", 255, "__init__", "self.pynccl_comm = PyNcclCommunicator("},
		pyFrame{sg + "/srt/distributed/device_communicators/pynccl.py", 108, "__init__", "self.comm: ncclComm_t = self.nccl.ncclCommInitRank("},
		pyFrame{sg + "/srt/distributed/device_communicators/pynccl_wrapper.py", 350, "ncclCommInitRank", "self.NCCL_CHECK("},
		pyFrame{sg + "/srt/distributed/device_communicators/pynccl_wrapper.py", 329, "NCCL_CHECK", `raise RuntimeError(f"NCCL error: {error_str}")`},
	)
	s.failTraceback(r, frames, "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)")
}

// logIllegalMemoryAccess logs a decode step dying of a CUDA illegal memory
// access on rank r (sglang#3713, sglang-crash-illegal-memory-access-2025-02.txt).
func (s *server) logIllegalMemoryAccess(r int) {
	sg := s.sglangRoot()
	frames := []pyFrame{
		{sg + "/srt/managers/scheduler.py", 1825, "run_scheduler_process", "scheduler.event_loop_overlap()"},
		{torchRoot + "/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"},
		{sg + "/srt/managers/scheduler.py", 519, "event_loop_overlap", "self.process_batch_result(tmp_batch, tmp_result)"},
		{sg + "/srt/managers/scheduler.py", 1116, "process_batch_result", "self.process_batch_result_decode(batch, result)"},
		{sg + "/srt/managers/scheduler.py", 1308, "process_batch_result_decode", "self.current_stream.synchronize()"},
		{torchRoot + "/cuda/streams.py", 100, "synchronize", "super().synchronize()"},
	}
	s.failTraceback(r, frames,
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
		"For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
		"Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
}

// bindErrorLine is uvicorn's bind error as SGLang logs it (sglang#2430:
// "[2024-12-10 15:50:02] ERROR:    [Errno 98] error while attempting to
// bind on address …"), the only port-in-use text seen from SGLang. asyncio
// words the errno in lower case, as Go's syscall.Errno does.
func bindErrorLine(host string, port int, err error) string {
	errno := syscall.EADDRINUSE
	errors.As(err, &errno)
	return fmt.Sprintf("ERROR:    [Errno %d] error while attempting to bind on address ('%s', %d): %s", int(errno), host, port, errno.Error())
}
