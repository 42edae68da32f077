package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configure a simulated host. The zero value is a valid default.
type Options struct {
	// Dir is the sim directory. Empty: a new temporary directory that Close
	// removes. A given directory is created if needed and never removed.
	Dir string
	// GPUs is the number of simulated GPUs (default 8, at most MaxGPUs).
	GPUs int
	// GPUCapture is an nvidia_gpu_exporter capture file (e.g. the H200 one in
	// shared/fixtures/nvidia-smi/captures). When set, the fake nvidia-smi
	// answers --help-query-gpu from it and --query-gpu with its load-section
	// rows verbatim (timestamp aside); GPUs beyond the capture's rows repeat
	// them with their own index and PCI bus id.
	GPUCapture string
	// ReplayLog makes the fake server replay this log (first "# source:"
	// line skipped) instead of generating one.
	ReplayLog string
	// StartupDelay is the fake server's start-up time, model time
	// (default 2.5 s; negative means 0).
	StartupDelay time.Duration
	// TimeScale > 1 runs every simulated duration that much faster (tests);
	// the logged tok/s stay the modelled ones. Default 1, at most 1000.
	TimeScale float64
	// Seed makes the fake server's noise reproducible (0: random).
	Seed int64
	// NCCLProfile makes StartServer launch with the seeds' six NCCL
	// variables (the demo sets it; the rate then is 89 tok/s, not 62.5).
	NCCLProfile bool
	// Eagle runs the fake server with EAGLE-3 speculative decoding
	// (accept len / accept rate fields; 94 tok/s tuned, 60 regressed).
	Eagle bool
	// Port is the fake server's HTTP port on 127.0.0.1 (0: a free one).
	Port int
	// LogPrefix is the rank tag style of the log: "tp" (default: "[… TP0] "),
	// "dp" ("[… DP0 TP0] ", every DP rank logs its share) or "none".
	LogPrefix string
	// NoAutoLoad stops the fake server from generating its own traffic: it
	// then decodes only for HTTP requests.
	NoAutoLoad bool
	// NoSSH skips the in-process SSH server (local-only tests).
	NoSSH bool
	// AllHostKeyTypes makes the SSH server offer ECDSA P-256 and RSA 2048
	// host keys besides ed25519, like a stock sshd, while known_hosts holds
	// only the ed25519 key: the setup where x/crypto's default host-key
	// algorithm order picks a key known_hosts lacks.
	AllHostKeyTypes bool
	// History is how many commits upstream main has after the checkout's
	// baseline (0: DefaultHistory; MinHistory to MaxHistory). A Dir that
	// already holds a repository of another length is refused.
	History int
	// Executable is the binary the wrappers re-execute (default
	// os.Executable()); it must call RunRoleFromEnv first thing.
	Executable string
}

// Host is a running simulated GPU host. Its fields are read-only.
//
// Directory layout (Dir):
//
//	sim.json               configuration read by the roles
//	bin/nvidia-smi         wrapper: the fake nvidia-smi
//	bin/sglang-server      wrapper: the fake SGLang server (SGLang flags + --repo, --port, …)
//	bin/flightdeck         wrapper: `flightdeck sim server …` runs the fake server (RoleCLI)
//	upstream.git/          bare repository with the whole history (the checkout's origin)
//	repo/                  the checkout: main tracks origin/main, reset to the baseline (see RepoCommits)
//	logs/sglang.log        the fake server's output (appended across launches)
//	run/gpu-state.json     the server's heartbeat, GPU memory and load, for nvidia-smi
//	run/worker-PID.json    a worker process's heartbeat and GPU memory (--sim-workers)
//	run/faults.json        injected faults (SetFaults), read by nvidia-smi and the fake NVML
//	run/sglang.pid         "PID STARTTIME" of the server launched by StartServer
//	ssh/id_ed25519(.pub)   client identity (0600) accepted by the SSH server
//	ssh/known_hosts        the host key as "[127.0.0.1]:PORT ssh-ed25519 …"
//	ssh/authorized_keys, ssh/ssh_host_ed25519_key(.pub)   for a real sshd
//	cache/                 XDG_CACHE_HOME of SSH sessions: an uploaded flightdeck agent lands here
type Host struct {
	Dir            string
	BinDir         string // prepend to PATH to use the fake tools
	LogPath        string // logs/sglang.log
	RepoPath       string
	Commits        RepoCommits
	SSHAddr        string // "127.0.0.1:PORT" ("" with NoSSH)
	User           string // the current user; the SSH server accepts any name
	KnownHostsPath string
	IdentityPath   string
	ServerPort     int // the fake server's HTTP port on 127.0.0.1

	opt     Options
	tempDir bool
	ssh     *SSHServer

	mu     sync.Mutex
	server *exec.Cmd
	exited chan struct{} // closed when server has been waited for
}

// Start builds a simulated host: directory layout, git repository, wrapper
// scripts and (unless NoSSH) the SSH server. The fake inference server is
// not started; call StartServer.
func Start(ctx context.Context, opt Options) (h *Host, err error) {
	if opt.GPUs == 0 {
		opt.GPUs = 8
	}
	if opt.GPUs < 1 || opt.GPUs > MaxGPUs {
		return nil, fmt.Errorf("sim: GPUs %d out of range 1..%d", opt.GPUs, MaxGPUs)
	}
	if opt.TimeScale == 0 {
		opt.TimeScale = 1
	}
	if !(opt.TimeScale > 0 && opt.TimeScale <= maxTimeScale) {
		return nil, fmt.Errorf("sim: TimeScale %g out of range (0, %d]", opt.TimeScale, maxTimeScale)
	}
	if opt.StartupDelay == 0 {
		opt.StartupDelay = 2500 * time.Millisecond
	}
	opt.StartupDelay = max(opt.StartupDelay, 0)
	switch opt.LogPrefix {
	case "", "tp", "dp", "none":
	default:
		return nil, fmt.Errorf("sim: LogPrefix %q: want tp, dp or none", opt.LogPrefix)
	}
	for _, p := range []*string{&opt.GPUCapture, &opt.ReplayLog} {
		if *p != "" {
			if *p, err = filepath.Abs(*p); err != nil {
				return nil, err
			}
		}
	}
	if opt.GPUCapture != "" {
		if _, err := LoadCapture(opt.GPUCapture); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
	}
	if opt.ReplayLog != "" {
		if _, err := os.Stat(opt.ReplayLog); err != nil {
			return nil, fmt.Errorf("sim: replay log: %w", err)
		}
	}
	exe := opt.Executable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sim: find own executable: %w", err)
		}
	}

	h = &Host{opt: opt}
	if opt.Dir == "" {
		if h.Dir, err = os.MkdirTemp("", "flightdeck-sim-"); err != nil {
			return nil, err
		}
		h.tempDir = true
	} else if h.Dir, err = filepath.Abs(opt.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			h.Close()
			h = nil
		}
	}()
	h.BinDir = filepath.Join(h.Dir, binDir)
	h.LogPath = filepath.Join(h.Dir, logFile)
	h.RepoPath = filepath.Join(h.Dir, repoDir)
	for _, d := range []string{h.BinDir, filepath.Dir(h.LogPath), filepath.Join(h.Dir, "run")} {
		if err = os.MkdirAll(d, 0o755); err != nil {
			return h, err
		}
	}
	cfg := simConfig{GPUs: opt.GPUs, GPUCapture: opt.GPUCapture, Seed: opt.Seed, ReplayLog: opt.ReplayLog,
		StartupDelay: opt.StartupDelay.Seconds(), TimeScale: opt.TimeScale, Eagle: opt.Eagle,
		LogPrefix: opt.LogPrefix, NoAutoLoad: opt.NoAutoLoad, OwnerPID: os.Getpid()}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err = writeFileAtomic(filepath.Join(h.Dir, configFile), b, 0o644); err != nil {
		return h, err
	}
	if err = writeWrapper(h.BinDir, "nvidia-smi", RoleNvidiaSMI, h.Dir, exe); err != nil {
		return h, err
	}
	if err = writeWrapper(h.BinDir, ServerWrapper, RoleServer, h.Dir, exe); err != nil {
		return h, err
	}
	if err = writeWrapper(h.BinDir, CLIWrapper, RoleCLI, h.Dir, exe); err != nil {
		return h, err
	}
	if _, statErr := os.Stat(filepath.Join(h.RepoPath, ".git")); statErr != nil {
		if h.Commits, err = BuildRepo(ctx, filepath.Join(h.Dir, upstream), h.RepoPath, opt.History); err != nil {
			return h, fmt.Errorf("sim: build repo: %w", err)
		}
	} else if h.Commits, err = readCommits(ctx, h.RepoPath); err != nil {
		return h, err
	} else if n, want := len(h.Commits.All)-len(baseHistory()), cmp.Or(opt.History, DefaultHistory); n != want {
		return h, fmt.Errorf("sim: %s holds a history of %d commits after the baseline, not %d: remove it and %s to build a new one",
			h.RepoPath, n, want, filepath.Join(h.Dir, upstream))
	}
	if u, uerr := user.Current(); uerr == nil {
		h.User = u.Username
	} else {
		h.User = strconv.Itoa(os.Getuid())
	}
	if !opt.NoSSH {
		keys, kerr := newSSHKeys(opt.AllHostKeyTypes)
		if kerr != nil {
			return h, kerr
		}
		h.ssh = newSSHServer(keys, h.Dir, h.BinDir)
		if err = h.ssh.Start(); err != nil {
			return h, err
		}
		h.SSHAddr = h.ssh.Addr()
		if h.IdentityPath, h.KnownHostsPath, err = writeSSHFiles(filepath.Join(h.Dir, sshDir), keys, h.SSHAddr); err != nil {
			return h, err
		}
	}
	// After the SSH server listens: a port picked before it, then freed,
	// could be the one the kernel gives the SSH listener (the server then
	// failed with "address already in use" on its own host's SSH port).
	if h.ServerPort = opt.Port; h.ServerPort == 0 {
		if h.ServerPort, err = freePort(); err != nil {
			return h, err
		}
	}
	return h, nil
}

// readCommits recovers RepoCommits from an existing sim checkout by
// subject, from the upstream history (origin/main): the checkout's own main
// may be anywhere (baseline, pulled, reset). The baseline is the fourth
// commit; the regressing and broken ones are found by their subjects.
func readCommits(ctx context.Context, repo string) (RepoCommits, error) {
	var rc RepoCommits
	cmd := exec.CommandContext(ctx, "git", "log", "--reverse", "--format=%H %s", "refs/remotes/origin/main")
	cmd.Dir, cmd.Env = repo, gitEnv()
	out, err := cmd.Output()
	if err != nil {
		return rc, fmt.Errorf("sim: read repo history (origin/main; a repo/ from an older flightdeck has none, remove it): %w", err)
	}
	base := baseHistory()
	broken := map[string]bool{}
	for _, b := range brokenCommits {
		broken[b.broken.subject] = true
	}
	for i, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, subj, _ := strings.Cut(l, " ")
		rc.All = append(rc.All, id)
		switch {
		case i < len(base):
			if i == len(base)-1 && subj == base[i].subject {
				rc.Baseline = id
			}
		case subj == SubjectRegressing:
			rc.Regressing = id
		case broken[subj]:
			rc.Broken = append(rc.Broken, id)
		}
	}
	if len(rc.All) == 0 || rc.Baseline == "" || rc.Regressing == "" {
		return rc, errors.New("sim: repo/ exists but is not the simulated history")
	}
	rc.Latest = rc.All[len(rc.All)-1]
	return rc, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Target is the SSH destination "user@127.0.0.1:PORT".
func (h *Host) Target() string { return h.User + "@" + h.SSHAddr }

// ServerURL is the fake server's base URL, "http://127.0.0.1:PORT".
func (h *Host) ServerURL() string { return "http://127.0.0.1:" + strconv.Itoa(h.ServerPort) }

// ServerArgv is the command line that launches the fake server from a shell
// on the host (what a launcher would run through SSH); env is not included.
func (h *Host) ServerArgv() []string {
	return []string{filepath.Join(h.BinDir, ServerWrapper), "--model-path", "/shared/kimi-k2.5-int4",
		"--tp-size", strconv.Itoa(h.opt.GPUs), "--mem-fraction-static", "0.88",
		"--host", "127.0.0.1", "--port", strconv.Itoa(h.ServerPort), "--repo", h.RepoPath}
}

// ServerEnv returns the environment StartServer adds for env: the NCCL
// profile when Options.NCCLProfile is set, overridden by env.
func (h *Host) ServerEnv(env map[string]string) map[string]string {
	out := map[string]string{}
	if h.opt.NCCLProfile {
		out = NCCLProfile()
	}
	maps.Copy(out, env)
	return out
}

// StartServer launches the fake server detached (its own session, stdio to
// logs/sglang.log, appending) with --repo, the port and h.ServerEnv(env)
// on top of this process's environment minus any NCCL_* variables. It
// returns once the process has started; readiness shows in the log and on
// /health. It fails if a server started here is still running.
func (h *Host) StartServer(ctx context.Context, env map[string]string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.server != nil {
		select {
		case <-h.exited:
		default:
			return errors.New("sim: server already running")
		}
	}
	lf, err := os.OpenFile(h.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	argv := h.ServerArgv()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = h.Dir
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var base []string
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); !strings.HasPrefix(k, "NCCL_") && k != EnvRole {
			base = append(base, e)
		}
	}
	extra := h.ServerEnv(env)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		base = append(base, k+"="+extra[k])
	}
	cmd.Env = base
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sim: start server: %w", err)
	}
	h.server, h.exited = cmd, make(chan struct{})
	done := h.exited
	go func() { cmd.Wait(); close(done) }()
	pid := cmd.Process.Pid
	start := procStartTime(pid)
	return writeFileAtomic(filepath.Join(h.Dir, pidFile), []byte(fmt.Sprintf("%d %s\n", pid, start)), 0o644)
}

// procStartTime is field 22 of /proc/PID/stat (clock ticks since boot),
// the value the remote launch script records against PID reuse.
func procStartTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "0"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "0"
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "0"
	}
	return f[19]
}

// WaitServerReady polls the server's /health every 20 ms until it answers
// 200 (ready) and returns nil, or returns ctx's error.
func (h *Host) WaitServerReady(ctx context.Context) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.ServerURL()+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sim: the server did not get ready: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// ServerPID is the pid of the server StartServer launched, or 0 when none is running.
func (h *Host) ServerPID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.server == nil {
		return 0
	}
	select {
	case <-h.exited:
		return 0
	default:
		return h.server.Process.Pid
	}
}

// StopServer stops the server StartServer launched: SIGTERM to its process
// group, SIGKILL if it has not exited when ctx ends or after 5 s. It is a
// no-op when no server is running.
func (h *Host) StopServer(ctx context.Context) error {
	h.mu.Lock()
	cmd, exited := h.server, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := cmd.Process.Pid
	select {
	case <-exited:
		return nil
	default:
	}
	syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	return nil
}

// stopOtherServer ends a fake server that was launched some other way (a
// launcher through SSH, `setsid -f`) and still heart-beats into this sim
// directory, so closing the demo leaves no server behind.
func (h *Host) stopOtherServer(ctx context.Context) {
	b, err := os.ReadFile(filepath.Join(h.Dir, stateFile))
	if err != nil {
		return
	}
	var st serverState
	if json.Unmarshal(b, &st) != nil || st.Exited || st.PID <= 0 || st.PID == os.Getpid() ||
		time.Since(time.Unix(0, st.Heartbeat)) > staleAfter || !pidAlive(st.PID) {
		return
	}
	target := st.PID
	if pgid, err := syscall.Getpgid(st.PID); err == nil && pgid == st.PID {
		target = -pgid // a session leader from setsid: take its group
	}
	syscall.Kill(target, syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for pidAlive(st.PID) && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if pidAlive(st.PID) {
		syscall.Kill(target, syscall.SIGKILL)
	}
}

// stopWorkers ends the worker processes that still heart-beat into this
// sim directory (orphans of a server that died, stubborn ones that ignored
// its SIGTERM): SIGTERM, then SIGKILL for those left after 2 s or when ctx
// ends.
func (h *Host) stopWorkers(ctx context.Context) {
	var pids []int
	for _, w := range readWorkers(h.Dir, time.Now()) {
		if w.PID != os.Getpid() {
			pids = append(pids, w.PID)
			syscall.Kill(w.PID, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	alive := func() bool { return slices.ContainsFunc(pids, pidAlive) }
	for alive() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range pids {
		if pidAlive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// WorkerPIDs lists the live worker processes of fake servers in this sim
// directory (--sim-workers), by GPU: the server's own while it runs, and
// orphans it left behind.
func (h *Host) WorkerPIDs() []int {
	var pids []int
	for _, w := range readWorkers(h.Dir, time.Now()) {
		pids = append(pids, w.PID)
	}
	return pids
}

// SetFaults replaces the injected nvidia-smi faults; running nvidia-smi
// loops pick them up on their next tick. The zero Faults clears them.
func (h *Host) SetFaults(f Faults) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(h.Dir, faultsFile), b, 0o644)
}

// StopSSH stops the SSH server (connections drop, their commands are
// killed); RestartSSH serves again on the same port with the same host key.
func (h *Host) StopSSH() error {
	if h.ssh == nil {
		return errors.New("sim: no SSH server")
	}
	return h.ssh.Stop()
}

// RestartSSH starts the SSH server again after StopSSH (same port and key).
func (h *Host) RestartSSH() error {
	if h.ssh == nil {
		return errors.New("sim: no SSH server")
	}
	return h.ssh.Start()
}

// Close stops the fake server (the one StartServer launched, and one
// launched any other way that still heart-beats into this directory), the
// worker processes still heart-beating into it, the SSH server, and removes
// the directory if Start created it. It is safe to call more than once.
func (h *Host) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.StopServer(ctx)
	h.stopOtherServer(ctx)
	h.stopWorkers(ctx)
	if h.ssh != nil {
		if e := h.ssh.Stop(); e != nil && err == nil && !errors.Is(e, net.ErrClosed) {
			err = e
		}
	}
	if h.tempDir && h.Dir != "" {
		if e := os.RemoveAll(h.Dir); e != nil && err == nil {
			err = e
		}
		h.tempDir = false
	}
	return err
}
