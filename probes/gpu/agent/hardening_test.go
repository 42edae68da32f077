package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Tests of what a review found: a cache others can write to, a swap of
// the agent between its check and its start, install steps that time
// out, a network stall blamed on the agent, an agent left running after
// a lost connection, a loader that refuses the agent.

// An install step that failed without the host answering it, or ran past
// its deadline, may pass at a retry; the host's refusals stay.
func TestInstallFailureKinds(t *testing.T) {
	cases := []struct {
		err       error
		transient bool
	}{
		{fmt.Errorf("remote: h: command stopped: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("remote: h: waiting for a free session (10 in use): %w", context.DeadlineExceeded), true},
		{errors.New("remote: h: starting command: ssh: unexpected packet"), true},
		{fmt.Errorf("wrapped: %w", &remote.ExitError{Code: 1, Stderr: []byte("sh: 1: syntax error\n")}), false},
		{&remote.ExitError{Code: 127}, false},
	}
	for _, c := range cases {
		err := failed("check refused", "check failed", c.err, nil)
		_, transient := errors.AsType[transientReason](err)
		_, refused := errors.AsType[fallbackReason](err)
		if transient != c.transient || refused == c.transient {
			t.Errorf("%v: %T %q, want transient %v", c.err, err, err, c.transient)
		}
	}
	if err := failed("r", "t", &remote.ExitError{Code: 1, Stderr: []byte("why\n")}, nil); err.Error() != "r: exit status 1: why" {
		t.Errorf("refusal %q", err)
	}
}

// slowHost makes the install check (probeScript) time out at the calls
// numbered in slow (from 1), as remote.SSH.Run reports a command past its
// deadline (a slow NFS home, a loaded host).
type slowHost struct {
	remote.Host
	mu    sync.Mutex
	n     int
	slow  map[int]bool
	count int // checks that timed out
}

func (h *slowHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	if isAgentCommand(cmd) && strings.Contains(cmd, "uname") && stdin == nil {
		h.mu.Lock()
		h.n++
		slow := h.slow[h.n]
		if slow {
			h.count++
		}
		h.mu.Unlock()
		if slow {
			return remote.Result{}, fmt.Errorf("remote: host: command stopped: %w", context.DeadlineExceeded)
		}
	}
	return h.Host.Run(ctx, cmd, stdin)
}

// A timed-out install check is not a refusal: the Runner falls back and
// retries the agent, which then runs.
func TestRunnerRetriesATimedOutInstall(t *testing.T) {
	rg := newLocalRig(t)
	h := &slowHost{Host: rg.host, slow: map[int]bool{1: true}}
	events := rg.run(&Runner{Host: h, Binary: rg.fakeAgent("agent", steadyAgent), retryFirst: 50 * time.Millisecond})
	src := expect[event.GPUSource](t, events)
	want := "agent install check failed: remote: host: command stopped: context deadline exceeded" + retryNote
	if src.Mode != event.SourceNvidiaSMI || src.Fallback != want {
		t.Fatalf("source %+v, want the fallback %q", src, want)
	}
	src = next(t, events, "source", isSource).Data.(event.GPUSource)
	if src.Mode != event.SourceAgent {
		t.Fatalf("after the retry: %+v, want the agent", src)
	}
}

// A background retry whose install check times out does not end the
// retries: the next one starts the agent.
func TestRunnerKeepsRetryingAfterATimedOutInstall(t *testing.T) {
	rg := newLocalRig(t)
	ran := filepath.Join(rg.dir, "ran")
	// The first agent dies at once; a retried one samples.
	body := fmt.Sprintf(`if [ ! -e %[1]s ]; then : > %[1]s; exit 1; fi
echo '%[2]s'
while :; do echo '%[3]s'; sleep 0.1; done`, ran, fakeHello, againSample)
	h := &slowHost{Host: rg.host, slow: map[int]bool{2: true}}
	events := rg.run(&Runner{Host: h, Binary: rg.fakeAgent("agent", body), retryFirst: 50 * time.Millisecond})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceNvidiaSMI || src.Fallback != "agent exited: exit status 1"+retryNote {
		t.Fatalf("source %+v", src)
	}
	src := next(t, events, "source", isSource).Data.(event.GPUSource)
	if src.Mode != event.SourceAgent {
		t.Fatalf("after the retries: %+v, want the agent", src)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count != 1 || h.n != 3 {
		t.Errorf("%d install checks, %d timed out; want 3, the second timed out", h.n, h.count)
	}
}

// A cache directory (or agent) that its group or others can write to is
// refused: they could rename the agent away and another in between its
// check and its start. The probe, the upload and the run script refuse it.
func TestInstallRefusesAWritableCache(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flightdeck")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := toolPath(t, "sha256sum")
	for _, level := range []string{"", "agent", "agent/v1", "agent/v1/flightdeck"} {
		for _, mode := range []os.FileMode{0o770, 0o707, 0o1777} {
			t.Run(fmt.Sprintf("%s %o", level, mode), func(t *testing.T) {
				cache := filepath.Join(t.TempDir(), "cache")
				if inst, err := installLocal(t, path, cache, bin); err != nil || inst.how != "uploaded" {
					t.Fatalf("first install: %+v, %v", inst, err)
				}
				open := filepath.Join(cache, level)
				if err := os.Chmod(open, mode); err != nil {
					t.Fatal(err)
				}
				_, err := installLocal(t, path, cache, bin)
				want := "agent cache " + open + " is writable by its group or others, who could swap the agent: refusing it (chmod go-w it)"
				if fr, ok := errors.AsType[fallbackReason](err); !ok || string(fr) != want {
					t.Errorf("install: %v, want %q", err, want)
				}
				for _, script := range []string{uploadScript, runScript} {
					cmd := exec.Command("sh", "-c", script, "flightdeck-agent", cache, "v1", strings.Repeat("0", 64), "agent")
					cmd.Stdin = strings.NewReader("agent")
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					_, err := cmd.Output()
					if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitRefused ||
						strings.TrimSpace(stderr.String()) != scriptRefusal+"writable "+open {
						t.Errorf("script: %v, %q; want exit %d", err, stderr.String(), exitRefused)
					}
				}
			})
		}
	}
}

// Over sshd: a group-writable cache falls back with the reason.
func TestRunnerRefusesAWritableCache(t *testing.T) {
	rg := newRig(t)
	if err := os.MkdirAll(rg.cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(rg.cache, 0o770); err != nil {
		t.Fatal(err)
	}
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	src := expectFallback(t, events)
	want := "agent cache " + rg.cache + " is writable by its group or others, who could swap the agent: refusing it (chmod go-w it)"
	if src.Fallback != want {
		t.Errorf("fallback %q, want %q", src.Fallback, want)
	}
	_, uploads, _ := rg.host.counts()
	if starts, _ := rg.host.agentSessions(); uploads != 0 || starts != 0 {
		t.Errorf("uploads %d, agent starts %d; want none", uploads, starts)
	}
}

// runScript writes its launch line first: whatever stalls after it (a
// check on a hung file system) has a pid the Runner can kill.
func TestRunScriptLaunchLineFirst(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(filepath.Join(cache, "agent", "v1"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", runScript, "flightdeck-agent", cache, "v1", strings.Repeat("0", 64), "agent")
	out, err := cmd.Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitRefused {
		t.Fatalf("run script: %v, want exit %d", err, exitRefused)
	}
	var d Decoder
	m, err := d.Decode(bytes.TrimSuffix(out, []byte("\n")))
	if err != nil || m.Kind != KindLaunch || m.Launch.PID != cmd.Process.Pid {
		t.Errorf("output %q: %+v, %v; want the launch line of pid %d", out, m, err, cmd.Process.Pid)
	}
}

// What runs is what was hashed: the run script opens the agent once,
// hashes what it opened and execs that open file. A sha256sum that swaps
// another agent into place while it hashes (someone renaming entries in
// the cache between the check and the exec) does not get its agent run.
func TestRunnerRunsWhatItHashed(t *testing.T) {
	tools := t.TempDir()
	real, err := exec.LookPath("sha256sum")
	if err != nil {
		t.Skip("no sha256sum")
	}
	driver := fakeDriverDir(t)
	rg := newRigWith(t, sshdtest.Options{PathDirs: []string{tools}, Env: map[string]string{"LD_LIBRARY_PATH": driver}})
	swapped := rg.fakeAgent("swapped", steadyAgent)
	// Only in the run script does the hashing tool have a file open as fd
	// 3 (the agent it hashes): swap then, once.
	armed := filepath.Join(rg.dir, "armed")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/sh
if [ -e /proc/$$/fd/3 ] && rm %s 2>/dev/null; then cp %s %s.new && mv -f %s.new %s; fi
exec %s "$@"
`, armed, swapped, rg.cachedPath("v0.8.0-test"), rg.cachedPath("v0.8.0-test"), rg.cachedPath("v0.8.0-test"), real)
	if err := os.WriteFile(filepath.Join(tools, "sha256sum"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(uploaded)") {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	if _, err := os.Stat(armed); err == nil {
		t.Fatal("the agent was not swapped during its hashing")
	}
	now, _ := os.ReadFile(rg.cachedPath("v0.8.0-test"))
	if want, _ := os.ReadFile(swapped); !bytes.Equal(now, want) {
		t.Fatal("the cached agent is not the swapped one")
	}
	if _, err := os.Stat(filepath.Join(rg.dir, "agent.pid")); err != nil {
		t.Errorf("the hashed agent did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rg.dir, "swapped.pid")); err == nil {
		t.Error("the agent swapped in after the hashing ran")
	}
}

// sshdSessionOf returns the sshd processes between pid and the sshd
// listener (its ancestors named sshd*, the listener excluded).
func sshdSessionOf(t *testing.T, pid int) []int {
	t.Helper()
	var procs []int
	for p := parentOf(pid); p > 1; p = parentOf(p) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
		if !strings.HasPrefix(string(comm), "sshd") {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if bytes.Contains(cmdline, []byte("-D")) {
			break // the listener: new connections still work
		}
		procs = append(procs, p)
	}
	if len(procs) == 0 {
		t.Fatalf("no sshd session process above %d", pid)
	}
	return procs
}

// parentOf reads a process's parent pid; 0 when it cannot.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// A network stall (the agent's sshd session frozen, as in a partition,
// shorter than the keepalive's detection) is not the agent's fault: the
// Runner asks the host before blaming the agent, reports the lost
// connection, starts the agent again once the host answers, without the
// nvidia-smi fallback, and kills the agent it left behind.
func TestRunnerStallIsTheConnections(t *testing.T) {
	rg := newRig(t)
	events := rg.run(&Runner{Binary: rg.fakeAgent("agent", steadyAgent)})
	if src := expect[event.GPUSource](t, events); src.Mode != event.SourceAgent {
		t.Fatalf("source %+v", src)
	}
	expect[event.GPUSample](t, events)
	old := rg.pidOf("agent")
	frozen := sshdSessionOf(t, old)
	for _, p := range frozen {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range frozen {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	})
	e := next(t, events, "stale or source", func(e event.Event) bool {
		switch e.Data.(type) {
		case event.GPUStale, event.GPUSource:
			return true
		}
		return false
	})
	if st, ok := e.Data.(event.GPUStale); !ok || st.Reason != "connection to host lost; restarting the agent" {
		t.Fatalf("after the stall: %T %+v, want a Stale for the lost connection", e.Data, e.Data)
	}
	src := next(t, events, "source", isSource).Data.(event.GPUSource)
	if src.Mode != event.SourceAgent || !strings.HasSuffix(src.Detail, "(cached)") {
		t.Fatalf("after the stall: %+v, want the cached agent again", src)
	}
	expect[event.GPUSample](t, events)
	if rg.pidOf("agent") == old {
		t.Fatal("no new agent")
	}
	// The first agent, blocked writing to its frozen sshd, was killed (it
	// stays a zombie until its frozen parent reaps it).
	waitGone(t, old)
}

// stallHost makes the run script's check stall (as on a hung file
// system), after its launch line: it runs the script (only: not the
// install's) with a PATH whose ls sleeps. The script's output is kept.
type stallHost struct {
	remote.Host
	tools string
	mu    sync.Mutex
	out   bytes.Buffer
}

func (h *stallHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	p, err := h.Host.Start(ctx, "PATH="+h.tools+":$PATH "+cmd)
	if err != nil {
		return nil, err
	}
	return &teeProc{Process: p, r: io.TeeReader(p.Stdout(), &lockedWriter{mu: &h.mu, w: &h.out})}, nil
}

func (h *stallHost) launchPID(t *testing.T) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	line, _, _ := bytes.Cut(h.out.Bytes(), []byte("\n"))
	var d Decoder
	m, err := d.Decode(line)
	if err != nil || m.Kind != KindLaunch {
		t.Fatalf("first line %q: %v, want the launch line", line, err)
	}
	return m.Launch.PID
}

type teeProc struct {
	remote.Process
	r io.Reader
}

func (p *teeProc) Stdout() io.Reader { return p.r }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// A run script stalled before it starts the agent has said its pid: the
// Runner kills it when it gives up (root over OpenSSH: the session's
// signal is refused), instead of leaving it and its session behind.
func TestRunnerKillsAStalledRunScript(t *testing.T) {
	rg := newRig(t)
	tools := t.TempDir()
	stall := "#!/bin/sh\nexec sleep 61\n"
	if err := os.WriteFile(filepath.Join(tools, "ls"), []byte(stall), 0o755); err != nil {
		t.Fatal(err)
	}
	h := &stallHost{Host: rg.host, tools: tools}
	events := rg.run(&Runner{Host: h, Binary: rg.fakeAgent("agent", steadyAgent), StartTimeout: 2 * time.Second})
	src := expectFallback(t, events)
	if want := "agent sent no hello within 2s"; !strings.HasPrefix(src.Fallback, want) {
		t.Errorf("fallback %q, want it to start with %q", src.Fallback, want)
	}
	waitGone(t, h.launchPID(t))
}

func TestLoaderError(t *testing.T) {
	cases := map[string]string{
		"":               "",
		"agent exited\n": "",
		"./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by ./flightdeck)\nnoise\n": "./flightdeck: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by ./flightdeck)",
		"x: error while loading shared libraries: libfoo.so.1: cannot open shared object file\n":                            "x: error while loading shared libraries: libfoo.so.1: cannot open shared object file",
		"x: libfoo.so.1: not found (required by x)\x1b[2J":                                                                  "x: libfoo.so.1: not found (required by x)",
	}
	for in, want := range cases {
		if got := loaderError([]byte(in)); got != want {
			t.Errorf("loaderError(%q) = %q, want %q", in, got, want)
		}
	}
}
