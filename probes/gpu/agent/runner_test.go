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

func TestRunnerArchMismatchFallsBack(t *testing.T) {
	rg := newRig(t)
	host := localPlatform
	localPlatform = "linux/riscv64"
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expect[event.GPUSource](t, events)
	if want := "host is " + host + ", this binary linux/riscv64"; src.Mode != event.SourceNvidiaSMI || src.Fallback != want {
		t.Fatalf("source %+v, want fallback %q", src, want)
	}
	expectSMISample(t, events)
	if _, uploads, _ := rg.host.counts(); uploads != 0 {
		t.Errorf("uploads %d, want none", uploads)
	}
}

func TestRunnerNoCgoFallsBack(t *testing.T) {
	rg := newRig(t)
	nvmlCompiled = func() bool { return false }
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expect[event.GPUSource](t, events)
	if src.Mode != event.SourceNvidiaSMI || !strings.Contains(src.Fallback, "no cgo") && !strings.Contains(src.Fallback, "no NVML") {
		t.Fatalf("source %+v", src)
	}
	expectSMISample(t, events)
	for _, c := range rg.host.commands() {
		if strings.Contains(c, "flightdeck-agent") {
			t.Errorf("the host was asked about the agent: %s", c)
		}
	}
}

func TestRunnerAgentKilledFallsBack(t *testing.T) {
	rg := newRig(t)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	expect[event.GPUSample](t, events)
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
	// What follows the kill: at most the samples already in flight, then
	// the fallback (the session's end is seen at once, well within 3
	// intervals), then nvidia-smi's samples.
	for {
		e := <-events
		if _, ok := e.Data.(event.GPUSample); ok {
			continue
		}
		src, ok := e.Data.(event.GPUSource)
		if !ok || src.Mode != event.SourceNvidiaSMI || !strings.HasPrefix(src.Fallback, "agent exited") {
			t.Fatalf("after the kill: %T %+v, want the nvidia-smi fallback", e.Data, e.Data)
		}
		break
	}
	expectSMISample(t, events)
}

func TestRunnerFallbackReasons(t *testing.T) {
	cases := []struct {
		name, body, want string
		retried          bool          // the agent is tried again: the reason may pass
		minStale         time.Duration // Runner.MinStale
	}{
		{"stalls", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; echo '` + fakeSample + `'; exec sleep 60`,
			"agent sent nothing for 3 intervals of 300ms", true, 0},
		// A floor above 3 intervals: the silence it waited for is named.
		{"stalls past MinStale", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exec sleep 60`,
			"agent sent nothing for 1.5s", true, 1500 * time.Millisecond},
		{"unavailable", `echo '{"t":"unavailable","v":1,"reason":"NVML init failed: ERROR_LIBRARY_NOT_FOUND","code":12}'; exit 3`,
			"NVML unavailable on the host: NVML init failed: ERROR_LIBRARY_NOT_FOUND", false, 0},
		{"exits after samples", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; echo '` + fakeSample + `'; exit 0`,
			"agent exited", true, 0},
		// The loader refused the binary: every retry would meet the same.
		{"old glibc", "echo \"./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version \\`GLIBC_2.34' not found (required by ./flightdeck)\" >&2; echo 'more noise' >&2; exit 1",
			"agent cannot run on the host: ./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by ./flightdeck)", false, 0},
		{"GLIBC after the hello", `echo '` + fakeHello + `'; echo "GLIBC_2.34 mentioned" >&2; exit 1`,
			"agent exited: exit status 1: GLIBC_2.34 mentioned", true, 0},
		{"terminated", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exit 143`,
			"agent exited: killed by SIGTERM (exit status 143)", true, 0},
		{"garbage", `echo '` + fakeHello + `'; while :; do printf 'Segmentation \033[31mfault\n'; sleep 0.1; done`,
			"agent sent nothing for 3 intervals of 300ms; last unreadable line: agent stream line", true, 0},
		{"newer protocol", `echo '{"t":"hello","v":2}'; exec sleep 60`,
			"agent speaks protocol v2", false, 0},
		{"no hello", `exec sleep 60`, "agent sent no hello within 2s", true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t)
			start := time.Now()
			events := rg.run(&Runner{Binary: rg.fakeAgent("agent", c.body), StartTimeout: 2 * time.Second, MinStale: c.minStale})
			src := expectFallback(t, events)
			if waited := time.Since(start); waited < c.minStale {
				t.Errorf("gave up after %v, before MinStale %v", waited, c.minStale)
			}
			if !strings.HasPrefix(src.Fallback, c.want) {
				t.Errorf("fallback %q, want it to start with %q", src.Fallback, c.want)
			}
			if strings.ContainsRune(src.Fallback, 0x1b) {
				t.Errorf("fallback not sanitised: %q", src.Fallback)
			}
			if retried := strings.HasSuffix(src.Fallback, "; retrying the agent in the background"); retried != c.retried {
				t.Errorf("fallback %q: retried %v, want %v", src.Fallback, retried, c.retried)
			}
		})
	}
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

// A stalled agent (silent: it neither writes nor exits) is killed when the
// Runner gives up on it, over a real OpenSSH sshd as root, which keeps a
// command of a closed session without a PTY running and refuses to signal
// it: it would otherwise hold its process and an sshd session slot.
func TestRunnerKillsAStalledAgent(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"after a sample", `echo '` + fakeHello + `'; echo '` + fakeSample + `'; exec sleep 61`, "agent sent nothing for 3 intervals"},
		{"before its hello", `exec sleep 61`, "agent sent no hello within 2s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rg := newRig(t)
			events := rg.run(&Runner{Binary: rg.fakeAgent("agent", c.body), StartTimeout: 2 * time.Second})
			src := expectFallback(t, events)
			if !strings.HasPrefix(src.Fallback, c.want) {
				t.Errorf("fallback %q, want it to start with %q", src.Fallback, c.want)
			}
			waitGone(t, rg.pidOf("agent"))
		})
	}
}

// fakeStale is the stale line an agent whose NVML read is blocked writes
// every interval.
const fakeStale = `{"t":"stale","at":2,"last_sample":1,"missed":2,"reason":"NVML call blocked for 600ms"}`

// An agent whose NVML is blocked is alive: it writes stale lines (and
// heartbeats). The Runner shows the stale reports and keeps the agent,
// for much longer than 3 intervals, until samples come again; only total
// silence makes it give up.
func TestRunnerKeepsAnAliveStaleAgent(t *testing.T) {
	rg := newRig(t)
	// 30 × 100 ms = 10 intervals without a sample, then samples.
	body := `echo '` + fakeHello + `'; echo '` + fakeSample + `'
i=0; while [ $i -lt 30 ]; do echo '` + fakeStale + `'; if [ $((i % 3)) = 0 ]; then echo '{"t":"alive","at":3}'; fi; sleep 0.1; i=$((i + 1)); done
while :; do echo '` + strings.Replace(fakeSample, "Fake GPU", "Fake GPU again", 1) + `'; sleep 0.1; done`
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", body)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	first := expect[event.GPUSample](t, events)
	stales := 0
	for {
		e := next(t, events, "an event", func(event.Event) bool { return true })
		switch p := e.Data.(type) {
		case event.GPUStale:
			stales++
			if p.Reason != "NVML call blocked for 600ms" || p.Missed != 2 || p.LastSample.IsZero() || p.LastSample.After(e.At) {
				t.Errorf("stale %+v at %v", p, e.At)
			}
			continue
		case event.GPUSample:
			if p.GPUs[0].Name.S != "Fake GPU again" {
				t.Fatalf("sample %+v", p)
			}
			if p.At.Before(first.At) {
				t.Errorf("sample at %v before the first %v", p.At, first.At)
			}
		default:
			t.Fatalf("%T %+v while the agent was stale, want only stale reports, then its samples", e.Data, e.Data)
		}
		break
	}
	if stales < 20 {
		t.Errorf("%d stale reports shown, want the agent's 30 (at least 20)", stales)
	}
	if _, _, starts := rg.host.counts(); starts != 1 {
		t.Errorf("agent started %d times, want once", starts)
	}
}

// The simulated host's fake NVML is named in the header's detail.
func TestRunnerSimulatedAgent(t *testing.T) {
	rg := newLocalRig(t)
	hello := strings.Replace(fakeHello, `"interval_ms":300`, `"interval_ms":300,"simulated":true`, 1)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", `echo '`+hello+`'; while :; do echo '`+fakeSample+`'; sleep 0.1; done`)})
	src := expect[event.GPUSource](t, events)
	if want := "simulated NVML, agent test, NVML 12.550.54.15, driver 550.54.15 (uploaded)"; src.Mode != event.SourceAgent || src.Detail != want {
		t.Fatalf("source %+v, want detail %q", src, want)
	}
}

// swapHost replaces the cached agent just before the Runner starts it:
// what runs must be what was checked, so the start is refused.
type swapHost struct {
	remote.Host
	path string
}

func (h *swapHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	if err := os.WriteFile(h.path, []byte("#!/bin/sh\necho swapped\n"), 0o700); err != nil {
		return nil, err
	}
	return h.Host.Start(ctx, cmd)
}

func TestRunnerRefusesAnAgentChangedAfterItsCheck(t *testing.T) {
	rg := newRig(t)
	host := &swapHost{Host: rg.host, path: rg.cachedPath("v0.8.0-test")}
	events := rg.run(&Runner{Host: host, Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expectFallback(t, events)
	want := "agent not started: the agent " + rg.cachedPath("v0.8.0-test") + " changed since it was checked (SHA-256 "
	if !strings.HasPrefix(src.Fallback, want) {
		t.Errorf("fallback %q, want it to start with %q", src.Fallback, want)
	}
	if _, err := os.Stat(filepath.Join(rg.dir, "agent.pid")); err == nil {
		t.Error("the agent ran")
	}
}
