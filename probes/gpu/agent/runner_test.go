package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The Runner over a real OpenSSH sshd on loopback. The "agent" it uploads
// is a shell script written by each test (printing a hello and samples, or
// misbehaving), and the fallback's nvidia-smi is a script printing CSV.

// testInterval is long enough that a starved CI machine running shell
// scripts does not miss three in a row by accident.
const testInterval = 300 * time.Millisecond

// countingHost counts the commands run on a host: uploads are Run calls
// with stdin.
type countingHost struct {
	remote.Host
	mu      sync.Mutex
	runs    int
	uploads int
	starts  int
	cmds    []string
	// Sessions of the agent's scripts (install check, upload, start):
	// how many started, how many are open, the most open at once.
	agentStarts, agentOpen, agentMaxOpen int
}

// isAgentCommand tells the agent's scripts from nvidia-smi and kill.
func isAgentCommand(cmd string) bool { return strings.Contains(cmd, "flightdeck-agent") }

func (h *countingHost) open(cmd string) func() {
	if !isAgentCommand(cmd) {
		return func() {}
	}
	h.agentOpen++
	h.agentMaxOpen = max(h.agentMaxOpen, h.agentOpen)
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			h.agentOpen--
			h.mu.Unlock()
		})
	}
}

func (h *countingHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.mu.Lock()
	h.runs++
	if stdin != nil {
		h.uploads++
	}
	h.cmds = append(h.cmds, cmd)
	closed := h.open(cmd)
	h.mu.Unlock()
	defer closed()
	return h.Host.Run(ctx, cmd, stdin)
}

func (h *countingHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.mu.Lock()
	h.starts++
	if isAgentCommand(cmd) {
		h.agentStarts++
	}
	h.cmds = append(h.cmds, cmd)
	closed := h.open(cmd)
	h.mu.Unlock()
	p, err := h.Host.Start(ctx, cmd)
	if err != nil {
		closed()
		return nil, err
	}
	return &countedProc{Process: p, closed: closed}, nil
}

// countedProc is a started command whose session counts as open until it
// ends or is closed.
type countedProc struct {
	remote.Process
	closed func()
}

func (p *countedProc) Wait() error {
	err := p.Process.Wait()
	p.closed()
	return err
}

func (p *countedProc) Close() error {
	err := p.Process.Close()
	p.closed()
	return err
}

// agentSessions returns how many agents were started and the most agent
// sessions open at once.
func (h *countingHost) agentSessions() (starts, maxOpen int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.agentStarts, h.agentMaxOpen
}

func (h *countingHost) commands() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.cmds...)
}

func (h *countingHost) counts() (runs, uploads, starts int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.runs, h.uploads, h.starts
}

// rig is one test's sshd, host connection, directories and fakes.
type rig struct {
	t     *testing.T
	srv   *sshdtest.Server
	host  *countingHost
	dir   string // scratch: scripts, pid files
	cache string // the agent cache on the "host"
	smi   string // the fake nvidia-smi
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWith(t, sshdtest.Options{Env: map[string]string{"LD_LIBRARY_PATH": fakeDriverDir(t)}})
}

// fakeDriverDir is a directory holding an empty libnvidia-ml.so.1, which
// the install check takes for an NVIDIA driver when it is on
// LD_LIBRARY_PATH (the fake agents never load it).
func fakeDriverDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "libnvidia-ml.so.1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newRigWith is a rig whose sshd runs with opts.
func newRigWith(t *testing.T, opts sshdtest.Options) *rig {
	t.Helper()
	srv := sshdtest.Start(t, opts)
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:        os.DevNull,
		HomeDir:           t.TempDir(),
		IdentityFiles:     []string{srv.ClientKeyPath()},
		KnownHostsFiles:   []string{known},
		NoAgent:           true,
		DialTimeout:       5 * time.Second,
		KeepaliveInterval: 2 * time.Second,
		KeepaliveCountMax: 3,
		ReconnectMin:      20 * time.Millisecond,
		ReconnectMax:      200 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("DialSSH: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	rg := &rig{t: t, srv: srv, host: &countingHost{Host: h}, dir: t.TempDir(), cache: filepath.Join(t.TempDir(), "cache")}
	rg.setup()
	return rg
}

// newLocalRig is a rig whose "host" is this machine (remote.Local): the
// Runner's paths without sshd.
func newLocalRig(t *testing.T) *rig {
	t.Setenv("LD_LIBRARY_PATH", fakeDriverDir(t))
	rg := &rig{t: t, host: &countingHost{Host: remote.NewLocal()}, dir: t.TempDir(), cache: filepath.Join(t.TempDir(), "cache")}
	rg.setup()
	return rg
}

func (rg *rig) setup() {
	t := rg.t
	rg.smi = rg.script("nvidia-smi", `case "$1" in --help-query-gpu) printf '"index"\n"temperature.gpu"\n'; exit 0;; esac
while :; do echo "0, 41"; sleep 0.1; done`)
	// Binaries are uploaded only where the host's platform is this one's
	// and the build has NVML; the scripts stand in for that build.
	oldCompiled, oldPlatform := nvmlCompiled, localPlatform
	nvmlCompiled = func() bool { return true }
	localPlatform = hostPlatform(unameSM(t))
	t.Cleanup(func() { nvmlCompiled, localPlatform = oldCompiled, oldPlatform })
}

func unameSM(t *testing.T) string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	str := func(a [65]int8) string {
		b := make([]byte, 0, len(a))
		for _, c := range a {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		return string(b)
	}
	return str(u.Sysname) + " " + str(u.Machine)
}

// script writes an executable shell script and returns its path.
func (rg *rig) script(name, body string) string {
	p := filepath.Join(rg.dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		rg.t.Fatal(err)
	}
	return p
}

const (
	fakeHello  = `{"t":"hello","v":1,"version":"test","driver":"550.54.15","nvml":"12.550.54.15","cuda":12040,"gpus":1,"interval_ms":300}`
	fakeSample = `{"t":"sample","at":1,"gpus":[{"index":0,"name":"Fake GPU","temp_c":40,"fan_speed_pct":"[N/A]"}],"apps":[]}`
)

// fakeAgent writes an agent script: it records its arguments and pid,
// prints the hello, then runs body.
func (rg *rig) fakeAgent(name, body string) string {
	return rg.script(name, fmt.Sprintf(`echo "$*" > %s/%s.args
echo $$ > %s/%s.pid
%s`, rg.dir, name, rg.dir, name, body))
}

// steadyAgent prints a sample every 100 ms, forever.
const steadyAgent = `echo '` + fakeHello + `'
while :; do echo '` + fakeSample + `'; sleep 0.1; done`

// run starts a Runner and returns its events; it stops at the test's end.
func (rg *rig) run(r *Runner) <-chan event.Event {
	rg.t.Helper()
	if r.Host == nil {
		r.Host = rg.host
	}
	r.Interval = testInterval
	r.CacheDir = rg.cache
	if r.Version == "" {
		r.Version = "v0.8.0-test"
	}
	if r.StartTimeout == 0 {
		r.StartTimeout = 10 * time.Second
	}
	if r.Fallback == nil {
		r.Fallback = &gpu.Sampler{Program: rg.smi}
	}
	ch := make(chan event.Event, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, func(e event.Event) { ch <- e }) }()
	rg.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				rg.t.Errorf("Runner.Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			rg.t.Error("Runner.Run did not return after its context ended")
		}
	})
	return ch
}

// next returns the next event that ok accepts, failing after 20 s.
func next(t *testing.T, ch <-chan event.Event, what string, ok func(event.Event) bool) event.Event {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ch:
			if ok(e) {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s within 20 s", what)
		}
	}
}

// expect returns the next event, which must be of type T.
func expect[T event.Payload](t *testing.T, ch <-chan event.Event) T {
	t.Helper()
	select {
	case e := <-ch:
		p, ok := e.Data.(T)
		if !ok {
			var want T
			t.Fatalf("event %T %+v, want a %T", e.Data, e.Data, want)
		}
		return p
	case <-time.After(20 * time.Second):
		var want T
		t.Fatalf("no %T within 20 s", want)
	}
	panic("unreachable")
}

func isSource(e event.Event) bool { _, ok := e.Data.(event.GPUSource); return ok }

func (rg *rig) cachedPath(version string) string {
	return filepath.Join(rg.cache, "agent", version, "flightdeck")
}

func TestRunnerUploadsOnceThenReuses(t *testing.T) {
	rg := newRig(t)
	bin := rg.fakeAgent("agent", steadyAgent)
	events := rg.run(&Runner{Binary: bin})

	src := expect[event.GPUSource](t, events)
	if src.Mode != event.SourceAgent || src.Detail != "agent test, NVML 12.550.54.15, driver 550.54.15 (uploaded)" {
		t.Fatalf("source %+v", src)
	}
	s := expect[event.GPUSample](t, events)
	if len(s.GPUs) != 1 || s.GPUs[0].Name.S != "Fake GPU" || s.GPUs[0].TempC.Value != 40 ||
		s.GPUs[0].FanPct.Status != event.CellNA || s.Apps == nil || s.At.Year() < 2020 {
		t.Fatalf("sample %+v", s)
	}
	// Steady state: no command runs on the host per sample.
	runs0, uploads, starts0 := rg.host.counts()
	if uploads != 1 || runs0 != 2 || starts0 != 1 {
		t.Fatalf("runs %d (uploads %d), starts %d after the first sample; want the check, one upload and one start", runs0, uploads, starts0)
	}
	for range 5 {
		expect[event.GPUSample](t, events)
	}
	if runs, _, starts := rg.host.counts(); runs != runs0 || starts != starts0 {
		t.Errorf("commands grew during 5 samples: runs %d→%d, starts %d→%d", runs0, runs, starts0, starts)
	}
	// The upload is in place, private, checked.
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(rg.cachedPath("v0.8.0-test"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("cached agent: %v", err)
	}
	if st, _ := os.Stat(rg.cachedPath("v0.8.0-test")); st.Mode().Perm() != 0o700 {
		t.Errorf("cached agent mode %v, want 0700", st.Mode().Perm())
	}
	if st, _ := os.Stat(filepath.Dir(rg.cachedPath("v0.8.0-test"))); st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", st.Mode().Perm())
	}
	if args, _ := os.ReadFile(filepath.Join(rg.dir, "agent.args")); strings.TrimSpace(string(args)) != "agent --interval 300ms" {
		t.Errorf("agent args %q", args)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(rg.cachedPath("v0.8.0-test")), ".flightdeck.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// A second connection reuses the cached agent.
	second := &countingHost{Host: rg.host.Host}
	events2 := rg.run(&Runner{Host: second, Binary: bin, PCIe: true})
	src = expect[event.GPUSource](t, events2)
	if src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(cached)") {
		t.Fatalf("second source %+v", src)
	}
	expect[event.GPUSample](t, events2)
	if runs, uploads, starts := second.counts(); runs != 1 || uploads != 0 || starts != 1 {
		t.Errorf("second connect: runs %d, uploads %d, starts %d; want the check and one start", runs, uploads, starts)
	}
	if args, _ := os.ReadFile(filepath.Join(rg.dir, "agent.args")); strings.TrimSpace(string(args)) != "agent --interval 300ms --pcie" {
		t.Errorf("agent args %q", args)
	}
}

func TestRunnerReplacesCorruptedCache(t *testing.T) {
	rg := newRig(t)
	bin := rg.fakeAgent("agent", steadyAgent)
	p := rg.cachedPath("v0.8.0-test")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho corrupted\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	events := rg.run(&Runner{Binary: bin})
	if src := expect[event.GPUSource](t, events); !strings.HasSuffix(src.Detail, "(uploaded)") {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	if _, uploads, _ := rg.host.counts(); uploads != 1 {
		t.Errorf("uploads %d, want 1", uploads)
	}
	want, _ := os.ReadFile(bin)
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Errorf("the corrupted agent was not replaced: %q", got)
	}
}

// expectFallback reads the nvidia-smi Source (after any agent events) and
// then a sample of the fake nvidia-smi.
func expectFallback(t *testing.T, events <-chan event.Event) event.GPUSource {
	t.Helper()
	e := next(t, events, "nvidia-smi source", func(e event.Event) bool {
		s, ok := e.Data.(event.GPUSource)
		return ok && s.Mode == event.SourceNvidiaSMI
	})
	expectSMISample(t, events)
	return e.Data.(event.GPUSource)
}

// expectSMISample waits for a sample of the fake nvidia-smi.
func expectSMISample(t *testing.T, events <-chan event.Event) {
	t.Helper()
	next(t, events, "nvidia-smi sample", func(e event.Event) bool {
		s, ok := e.Data.(event.GPUSample)
		return ok && len(s.GPUs) == 1 && s.GPUs[0].TempC.Value == 41
	})
}

// A dropped connection is not the agent's fault: the Runner waits for the
// host and starts the agent again.
func TestRunnerRestartsAgentAfterReconnect(t *testing.T) {
	rg := newRig(t)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	rg.srv.Stop()
	rg.srv.Restart()
	e := next(t, events, "stale or source", func(e event.Event) bool {
		switch e.Data.(type) {
		case event.GPUStale, event.GPUSource:
			return true
		}
		return false
	})
	if st, ok := e.Data.(event.GPUStale); !ok || !strings.Contains(st.Reason, "connection to host lost") {
		t.Fatalf("after the drop: %+v, want a Stale for the lost connection", e.Data)
	}
	src := next(t, events, "source", isSource).Data.(event.GPUSource)
	if src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(cached)") {
		t.Fatalf("after the reconnection: %+v, want the cached agent again", src)
	}
	expect[event.GPUSample](t, events)
}

// On a local host (flightdeck on the GPU box, or no sshd here) the same
// install, stream and fallback paths run.
func TestRunnerLocalHost(t *testing.T) {
	rg := newLocalRig(t)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(uploaded)") {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	runs0, _, starts0 := rg.host.counts()
	for range 5 {
		expect[event.GPUSample](t, events)
	}
	if runs, _, starts := rg.host.counts(); runs != runs0 || starts != starts0 {
		t.Errorf("commands grew during 5 samples: runs %d→%d, starts %d→%d", runs0, runs, starts0, starts)
	}
	pid, err := os.ReadFile(filepath.Join(rg.dir, "agent.pid"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if src := expectFallback(t, events); !strings.HasPrefix(src.Fallback, "agent exited") {
		t.Errorf("fallback %q", src.Fallback)
	}
}

// pidOf reads the pid a fake agent recorded.
func (rg *rig) pidOf(name string) int {
	rg.t.Helper()
	b, err := os.ReadFile(filepath.Join(rg.dir, name+".pid"))
	if err != nil {
		rg.t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		rg.t.Fatal(err)
	}
	return n
}

// waitGone polls until no live (non-zombie) process has pid, failing
// after a generous 20 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || syscall.Kill(pid, 0) != nil {
			return
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs 20 s after the fallback", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
