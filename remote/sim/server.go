package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serverEnv is what the server role runs against.
type serverEnv struct {
	dir            string // sim dir; "" disables the GPU state file
	stdout, stderr io.Writer
	environ        []string          // decides the NCCL profile
	exe            string            // binary re-executed as a worker ("": os.Executable())
	ready          func(addr string) // test hook: called once the HTTP port is bound
}

// logWriter serialises log lines: one Write per complete line, so a tail
// never sees two lines interleaved.
type logWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string // "tp", "dp", "none"
}

func (l *logWriter) line(rank, msg string) {
	s := l.stamp(rank, msg) + "\n"
	l.mu.Lock()
	io.WriteString(l.w, s)
	l.mu.Unlock()
}

// stamp prefixes msg with SGLang's "[date time RANK] " tag.
func (l *logWriter) stamp(rank, msg string) string {
	ts := time.Now().Format("2006-01-02 15:04:05")
	if rank == "" || l.prefix == "none" {
		return "[" + ts + "] " + msg
	}
	return "[" + ts + " " + rank + "] " + msg
}

// block writes lines (already prefixed where they need it) in one Write,
// so a traceback is never interleaved with another line.
func (l *logWriter) block(lines []string) {
	s := strings.Join(lines, "\n") + "\n"
	l.mu.Lock()
	io.WriteString(l.w, s)
	l.mu.Unlock()
}

func (l *logWriter) raw(s string) {
	l.mu.Lock()
	io.WriteString(l.w, s+"\n")
	l.mu.Unlock()
}

// rankTag is the scheduler rank tag of TP rank r ("TP3" or "DP3 TP3").
func (s *server) rankTag(r int) string {
	if s.opt.logPrefix == "dp" {
		return fmt.Sprintf("DP%d TP%d", r, r)
	}
	return fmt.Sprintf("TP%d", r)
}

// Memory model of one H200 rank (MiB) for Kimi-K2.5 INT4 at TP 8.
const (
	gpuTotalMiB    = 143771
	gpuReservedMiB = 614
	ctxMiB         = 2007  // CUDA context + NCCL communicators (1.96 GB)
	weightsMiB     = 73339 // 71.62 GB of weights per rank
	graphsMiB      = 1024  // captured CUDA graphs
	kvBytesPerTok  = 70272 // MLA latent cache, 61 layers
	maxContext     = 262144
	gpuCapMiB      = gpuTotalMiB - gpuReservedMiB // what processes can use
)

// server is one fake SGLang server process.
type server struct {
	opt     serverOptions
	env     serverEnv
	log     *logWriter
	rng     *rand.Rand
	rngMu   sync.Mutex
	rate    float64 // single-request tok/s after launch noise
	kvToks  int
	kvMiB   int64
	started time.Time // wall

	mu       sync.Mutex
	memMiB   int64
	load     float64
	heat     float64
	ready    bool
	stopping bool

	eng     *engine
	workers []*workerProc // spawned by spawnWorkers; read-only afterwards
}

func (s *server) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.opt.timeScale)
}

// sleep waits d of model time; false if ctx ended first.
func (s *server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(s.scaled(d))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *server) set(mem int64, load float64) {
	s.mu.Lock()
	if mem >= 0 {
		s.memMiB = mem
	}
	if load >= 0 {
		s.load = load
	}
	s.mu.Unlock()
}

func (s *server) randFloat() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}

// runServer is the fake SGLang server. It returns the exit status.
func runServer(ctx context.Context, args []string, e serverEnv) int {
	if d := simDirArg(args); d != "" {
		e.dir = d
	}
	cfg, err := readConfig(e.dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "sglang-server: %v\n", err)
		return 2
	}
	o, err := parseServerArgs(args, cfg)
	if err == nil && o.workers > 0 && e.dir == "" {
		err = errors.New("--sim-workers needs a sim directory (--sim-dir or " + EnvDir + ")")
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "launch_server.py: error: %v\n", err)
		return 2
	}
	if o.repo == "" && e.dir != "" {
		o.repo = filepath.Join(e.dir, repoDir) // the sim's checkout is the server's source
	}
	if cfg.OwnerPID > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		go watchOwner(ctx, cfg.OwnerPID, time.Second, stop)
	}
	seed := o.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	s := &server{opt: o, env: e, log: &logWriter{w: e.stdout, prefix: o.logPrefix},
		rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), started: time.Now()}

	// Python imports the server's code before anything else: a checkout
	// whose code does not import (the history's broken commits) fails
	// here, with the traceback on stderr and status 1.
	if o.repo != "" && o.replayLog == "" {
		if tb := importFailure(o.repo); tb != nil {
			if !s.sleep(ctx, o.startupDelay/8) {
				return 0
			}
			writeLines(e.stderr, tb)
			return 1
		}
	}

	// SGLang binds its HTTP port before it loads anything (sglang#17754), so
	// a taken port fails at once. The GPU state file is left alone: it is
	// usually the server holding the port that publishes it.
	if err := checkPort(o.host, o.port); err != nil {
		s.log.line("", bindErrorLine(o.host, o.port, err))
		return 1
	}

	regressed := false
	if o.repo != "" {
		if regressed, err = TreeRegressed(o.repo); err != nil {
			fmt.Fprintf(e.stderr, "sglang-server: read repo: %v\n", err)
		}
	}
	s.rate = ModelTokPerSec(HasNCCLProfile(e.environ), regressed, o.eagle) * launchNoise(s.rng)
	s.kvMiB = int64(float64(gpuTotalMiB)*o.memFraction) - ctxMiB - weightsMiB - graphsMiB
	if s.kvMiB < 1024 {
		s.kvMiB = 1024
	}
	s.kvToks = int(s.kvMiB * 1048576 / kvBytesPerTok)
	s.eng = newEngine(s)

	hbCtx, hbStop := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); s.heartbeat(hbCtx) }()
	defer func() {
		hbStop()
		<-hbDone
		s.writeState(true)
	}()
	if err := s.spawnWorkers(); err != nil {
		fmt.Fprintf(e.stderr, "sglang-server: start workers: %v\n", err)
		for _, w := range s.workers {
			w.proc.Kill() // half a set of workers is nobody's: never leave it
		}
		return 1
	}

	var ln net.Listener
	if o.replayLog != "" {
		ln, err = s.listen()
		if err != nil {
			s.endWorkers(syscall.SIGKILL)
			return 1
		}
	} else if ln, err = s.startup(ctx); err != nil {
		if ctx.Err() != nil {
			s.endWorkers(syscall.SIGTERM)
			s.shutdown(nil)
			return 0
		}
		s.endWorkers(syscall.SIGKILL) // SGLang's kill_process_tree after a child failed
		return 1
	}
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	if e.ready != nil {
		e.ready(ln.Addr().String())
	}

	engCtx, engStop := context.WithCancel(ctx)
	defer engStop()
	engDone := make(chan struct{})
	go func() { defer close(engDone); s.eng.run(engCtx) }()
	if o.replayLog != "" {
		s.replay(ctx)
	} else {
		s.warmup(ctx)
	}
	if o.simFail == "crash-after-ready" && s.isReady() && s.sleep(ctx, o.crashAfter) {
		engStop()
		<-engDone
		s.mu.Lock()
		s.stopping = true
		s.mu.Unlock()
		s.logIllegalMemoryAccess(s.rng.IntN(o.tp))
		srv.Close()
		s.endWorkers(syscall.SIGKILL)
		return 1
	}
	<-ctx.Done()
	s.endWorkers(syscall.SIGTERM)
	s.shutdown(srv)
	engStop()
	<-engDone
	return 0
}

// simDirArg returns the value of --sim-dir in a server command line, ""
// when absent; the roles need it before the other flags, to read sim.json.
func simDirArg(args []string) string {
	dir := ""
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		if name != "--sim-dir" {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				break
			}
			i++
			val = args[i]
		}
		dir = val
	}
	return dir
}

// watchOwner calls gone when process pid no longer exists (checked every
// interval), ending the server the way SIGTERM does.
func watchOwner(ctx context.Context, pid int, every time.Duration, gone func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			gone()
			return
		}
	}
}

// checkPort binds host:port and lets it go, as SGLang's early check does;
// port 0 (any free port) always passes.
func checkPort(host string, port int) error {
	if port == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return ln.Close()
}

func (s *server) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.opt.host, strconv.Itoa(s.opt.port)))
	if err != nil {
		s.log.line("", bindErrorLine(s.opt.host, s.opt.port, err))
		return nil, err
	}
	s.opt.port = ln.Addr().(*net.TCPAddr).Port
	return ln, nil
}

// startup logs SGLang's start-up sequence over the start-up delay, moving
// GPU memory the way a real launch does, and binds the HTTP port at the
// "Uvicorn running" line. The server is not ready yet when it returns.
func (s *server) startup(ctx context.Context) (net.Listener, error) {
	o := s.opt
	d := o.startupDelay
	at := func(frac float64) time.Duration { return time.Duration(frac * float64(d)) }
	elapsed := time.Duration(0)
	until := func(frac float64) bool {
		ok := s.sleep(ctx, at(frac)-elapsed)
		elapsed = at(frac)
		return ok
	}
	gb := func(mib int64) string { return fmt.Sprintf("%.2f GB", float64(mib)/1024) }
	// Memory other processes hold on a rank's GPU (orphaned workers of an
	// earlier server) is not available to this one.
	others := s.foreignMemory()
	avail := func(r int, used int64) string { return gb(gpuCapMiB - used - sumMiB(others[r])) }
	ranks := s.rng.Perm(o.tp)

	s.log.line("", "server_args=ServerArgs("+s.serverArgs()+")")
	s.set(520, 0.02)
	if !until(0.06) {
		return nil, ctx.Err()
	}
	s.log.line(s.rankTag(0), "sglang is using nccl==2.27.3")
	if o.simFail == "nccl" {
		s.logNCCLError(ranks[0])
		return nil, errSimFailed
	}
	for _, r := range ranks {
		s.log.line(s.rankTag(r), "Init torch distributed ends. mem usage="+gb(ctxMiB))
	}
	s.set(ctxMiB, 0.05)
	if !until(0.1) {
		return nil, ctx.Err()
	}
	for _, r := range ranks {
		s.log.line(s.rankTag(r), "Load weight begin. avail mem="+avail(r, ctxMiB))
	}
	// The rank that runs out of memory first, and at which tenth of the
	// weights: where others hold too much, or anywhere with --sim-fail oom.
	oomRank, oomAt := -1, 11
	for _, r := range ranks {
		free := gpuCapMiB - ctxMiB - sumMiB(others[r])
		if k := int(max(free, 0)*10/weightsMiB) + 1; k <= 10 && k < oomAt {
			oomRank, oomAt = r, k
		}
	}
	if o.simFail == "oom" && oomRank < 0 {
		oomRank, oomAt = ranks[0], 6
	}
	for k := 1; k <= 10; k++ { // weights stream in
		if !until(0.1 + 0.035*float64(k)) {
			return nil, ctx.Err()
		}
		if k == oomAt {
			used := int64(ctxMiB + weightsMiB*int64(k-1)/10)
			if len(others[oomRank]) == 0 {
				used = gpuCapMiB - 1086 // the weights alone filled the GPU
			}
			s.set(used, 0.1)
			s.logOOM(oomRank, used, weightsMiB/10, others[oomRank])
			return nil, errSimFailed
		}
		s.set(ctxMiB+weightsMiB*int64(k)/10, 0.1)
	}
	used := int64(ctxMiB + weightsMiB)
	for _, r := range ranks {
		s.log.line(s.rankTag(r), fmt.Sprintf("Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=%s, mem usage=%s.", avail(r, used), gb(weightsMiB)))
	}
	if !until(0.5) {
		return nil, ctx.Err()
	}
	s.log.line(s.rankTag(0), "Using KV cache dtype: torch.bfloat16")
	s.log.line(s.rankTag(0), fmt.Sprintf("KV Cache is allocated. #tokens: %d, K size: %s, V size: %s", s.kvToks, gb(s.kvMiB/2), gb(s.kvMiB-s.kvMiB/2)))
	used += s.kvMiB
	s.set(used, 0.1)
	s.log.line(s.rankTag(0), "Memory pool end. avail mem="+avail(0, used))
	if !until(0.55) {
		return nil, ctx.Err()
	}
	s.log.line(s.rankTag(0), "Capture cuda graph begin. This can take up to several minutes. avail mem="+avail(0, used+64))
	s.log.line(s.rankTag(0), "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160]")
	s.set(-1, 0.35)
	if !until(0.8) {
		return nil, ctx.Err()
	}
	used += graphsMiB
	s.set(used, 0.02)
	for _, r := range ranks {
		took := (at(0.8) - at(0.55)).Seconds() * (0.98 + 0.04*s.randFloat())
		s.log.line(s.rankTag(r), fmt.Sprintf("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%s. avail mem=%s.", took, gb(graphsMiB), avail(r, used)))
	}
	if !until(0.82) {
		return nil, ctx.Err()
	}
	ln, err := s.listen()
	if err != nil {
		return nil, err
	}
	pid := os.Getpid()
	s.log.line("", fmt.Sprintf("INFO:     Started server process [%d]", pid))
	s.log.line("", "INFO:     Waiting for application startup.")
	s.log.line("", "INFO:     Application startup complete.")
	s.log.line("", fmt.Sprintf("INFO:     Uvicorn running on http://%s (Press CTRL+C to quit)", net.JoinHostPort(o.host, strconv.Itoa(s.opt.port))))
	return ln, nil
}

// warmup finishes start-up like SGLang: a warm-up request, then the ready line.
func (s *server) warmup(ctx context.Context) {
	d := s.opt.startupDelay
	if !s.sleep(ctx, time.Duration(0.05*float64(d))) {
		return
	}
	s.accessLog("GET /get_model_info", http.StatusOK)
	r := s.eng.submit(6, 1)
	select {
	case <-ctx.Done():
		return
	case <-r.done:
	}
	if !s.sleep(ctx, time.Duration(0.1*float64(d))) {
		return
	}
	s.accessLog("POST /generate", http.StatusOK)
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
	s.log.line("", "The server is fired up and ready to roll!")
	s.eng.setAuto(!s.opt.noAutoLoad)
}

func (s *server) accessLog(reqLine string, code int) {
	port := 40000 + int(s.randFloat()*20000)
	s.log.line("", fmt.Sprintf("INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" %d %s", port, reqLine, code, http.StatusText(code)))
}

func (s *server) isReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ready && !s.stopping
}

// shutdown logs uvicorn's shutdown lines and stops serving.
func (s *server) shutdown(srv *http.Server) {
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.log.line("", "INFO:     Shutting down")
	if srv != nil {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Shutdown(c)
		cancel()
	}
	s.log.line("", "INFO:     Waiting for application shutdown.")
	s.log.line("", "INFO:     Application shutdown complete.")
	s.log.line("", fmt.Sprintf("INFO:     Finished server process [%d]", os.Getpid()))
}

// replay writes a real log's lines (without a leading "# source:" line) at
// a steady cadence, from the top again after the end, and reports full GPU
// memory and load meanwhile.
func (s *server) replay(ctx context.Context) {
	b, err := os.ReadFile(s.opt.replayLog)
	if err != nil {
		fmt.Fprintf(s.env.stderr, "sglang-server: replay log: %v\n", err)
		return
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "# source:") {
		lines = lines[1:]
	}
	s.set(ctxMiB+weightsMiB+s.kvMiB+graphsMiB, 1)
	go func() {
		if s.sleep(ctx, s.opt.startupDelay) {
			s.mu.Lock()
			s.ready = true
			s.mu.Unlock()
		}
	}()
	if len(lines) == 0 {
		return
	}
	for i := 0; ; i++ {
		if i > 0 && i%len(lines) == 0 && !s.sleep(ctx, 4*s.opt.replayEvery) {
			return
		}
		s.log.raw(lines[i%len(lines)])
		if !s.sleep(ctx, s.opt.replayEvery) {
			return
		}
	}
}

// heartbeat publishes the GPU state every 200 ms (wall) and integrates heat.
func (s *server) heartbeat(ctx context.Context) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		now := time.Now()
		dt := now.Sub(last).Seconds() * s.opt.timeScale
		last = now
		s.mu.Lock()
		s.heat += (s.load - s.heat) * (1 - math.Exp(-dt/heatTau))
		s.mu.Unlock()
		s.writeState(false)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *server) writeState(exited bool) {
	if s.env.dir == "" {
		return
	}
	s.mu.Lock()
	st := serverState{PID: os.Getpid(), Heartbeat: time.Now().UnixNano(), TP: s.opt.tp,
		MemMiB: s.memMiB, Load: s.load, Heat: s.heat, Exited: exited}
	s.mu.Unlock()
	if exited {
		st.MemMiB, st.Load = 0, 0
	}
	b, _ := json.Marshal(st)
	path := filepath.Join(s.env.dir, stateFile)
	if err := writeFileAtomic(path, b, 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(s.env.stderr, "sglang-server: write gpu state: %v\n", err)
	}
}
