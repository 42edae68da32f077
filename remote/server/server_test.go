package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The test binary doubles as a hand-started server that listens on a port.
func TestMain(m *testing.M) {
	if os.Getenv("FLIGHTDECK_TEST_SLEEP") != "" {
		time.Sleep(5 * time.Minute)
		os.Exit(0)
	}
	if port := os.Getenv("FLIGHTDECK_TEST_LISTEN"); port != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			os.Exit(3)
		}
		http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, `{"data":[]}`)
		}))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i > 0 && s[i+2] != 'Z'
}

// cleanupTree kills whatever is left of a launch's tree when the test ends.
func cleanupTree(t *testing.T, h remote.Host, logDir string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if f, err := Find(ctx, h, logDir, 0, ""); err == nil && f.Running {
			Kill(ctx, h, f.Target, time.Second)
		}
	})
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLaunchDetachedRecordAndExitStatus(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	cleanupTree(t, h, logDir)
	at := time.Date(2026, 11, 29, 10, 15, 0, 0, time.Local)
	spec := Spec{Preset: "sglang", Profile: "nccl-ll-ring", Server: "sglang", Workdir: dir, LogDir: logDir, Port: 30000, At: at,
		Argv: []string{"sh", "-c", `pwd; printf '%s|%s\n' "$NCCL_PROTO" "$HF_TOKEN"; read x || echo stdin-closed; umask; sleep 0.3; exit 7`,
			"--api-key", "sk-argvsecret", "--proxy=http://bob:Pr0xyPassw0rd@proxy:3128"},
		Env: map[string]string{"NCCL_PROTO": "LL", "HF_TOKEN": "hf_secret", "HTTPS_PROXY": "http://bob:EnvPassw0rd@proxy:3128"}}
	um := syscall.Umask(022) // the login's umask, which the server keeps
	defer syscall.Umask(um)
	r, err := Launch(ctx, h, spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.PID <= 1 || r.PGID != r.PID || r.SID != r.PID || r.StartTime == 0 {
		t.Fatalf("record ids: %+v (want pid = pgid = sid after setsid, a start time)", r)
	}
	if want := filepath.Join(logDir, "sglang-20261129-101500.log"); r.Launch.LogPath != want {
		t.Errorf("log path %q, want %q", r.Launch.LogPath, want)
	}
	if r.Launch.Env["HF_TOKEN"] != "<redacted>" || r.Launch.Env["NCCL_PROTO"] != "LL" {
		t.Errorf("recorded env %v: want HF_TOKEN redacted, NCCL_PROTO kept", r.Launch.Env)
	}
	if want := append(slices.Clone(spec.Argv[:3]), "--api-key", "<redacted>", "--proxy=http://<redacted>@proxy:3128"); !slices.Equal(r.Launch.Argv, want) ||
		r.Launch.Profile != "nccl-ll-ring" || r.Launch.Port != 30000 || r.Launch.Env["HTTPS_PROXY"] != "http://<redacted>@proxy:3128" {
		t.Errorf("recorded launch %+v", r.Launch)
	}
	var f event.ServerFound
	waitFor(t, "exit recorded", func() bool {
		f, err = Find(ctx, h, logDir, 0, "")
		return err == nil && !f.Running && f.Exit >= 0
	})
	if f.Exit != 7 || f.Record == nil || f.Record.PID != r.PID {
		t.Fatalf("after exit: %+v, want exit 7 of pid %d", f, r.PID)
	}
	log := readFile(t, r.Launch.LogPath)
	// The server got the real secret, its working directory, no stdin and
	// the login's umask.
	if want := dir + "\nLL|hf_secret\nstdin-closed\n0022\n"; log != want {
		t.Errorf("server log %q, want %q", log, want)
	}
	pidfile := readFile(t, filepath.Join(logDir, PidfileName))
	for _, secret := range []string{"hf_secret", "sk-argvsecret", "Pr0xyPassw0rd", "EnvPassw0rd"} {
		if strings.Contains(pidfile, secret) {
			t.Errorf("the pidfile holds the secret %q:\n%s", secret, pidfile)
		}
	}
	// flightdeck's files on the host are 0600, the directory it made 0700.
	for p, want := range map[string]os.FileMode{logDir: 0o700, r.Launch.LogPath: 0o600,
		filepath.Join(logDir, PidfileName): 0o600, filepath.Join(logDir, "flightdeck-server.exit"): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings for a private log directory: %q", r.Warnings)
	}
}

func TestLaunchRefusesSecondServerAndNamesLogsUniquely(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	cleanupTree(t, h, dir)
	at := time.Now()
	spec := Spec{Preset: "sim", Argv: []string{"sleep", "60"}, LogDir: dir, Workdir: dir, At: at}
	r, err := Launch(ctx, h, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Launch(ctx, h, spec)
	var are *AlreadyRunningError
	if !errors.As(err, &are) || are.PID != r.PID {
		t.Fatalf("second launch: %v, want AlreadyRunningError for pid %d", err, r.PID)
	}
	if _, err := Kill(ctx, h, event.KillTarget{PID: r.PID, StartTime: r.StartTime, PGID: r.PGID, SID: r.SID}, time.Second); err != nil {
		t.Fatal(err)
	}
	r2, err := Launch(ctx, h, spec) // same second: a new name, the first log kept
	if err != nil {
		t.Fatal(err)
	}
	if r2.Launch.LogPath == r.Launch.LogPath || !strings.HasSuffix(r2.Launch.LogPath, "-2.log") {
		t.Errorf("second log %q vs first %q: want a distinct -2 name", r2.Launch.LogPath, r.Launch.LogPath)
	}
	if _, err := os.Stat(r.Launch.LogPath); err != nil {
		t.Errorf("first log gone: %v", err)
	}
}

func TestLaunchValidation(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		spec Spec
		want string
	}{
		{"lower-case env name", Spec{Argv: []string{"true"}, Env: map[string]string{"nccl_proto": "LL"}}, `"nccl_proto"`},
		{"digit first", Spec{Argv: []string{"true"}, Env: map[string]string{"1X": "y"}}, `"1X"`},
		{"option-like name", Spec{Argv: []string{"true"}, Env: map[string]string{"-i": "y"}}, `"-i"`},
		{"newline value", Spec{Argv: []string{"true"}, Env: map[string]string{"NCCL_DEBUG": "INFO\nrm -rf /"}}, "NCCL_DEBUG contains a newline"},
		{"NUL value", Spec{Argv: []string{"true"}, Env: map[string]string{"X": "a\x00b"}}, "NUL"},
		{"newline flag", Spec{Argv: []string{"sglang", "--x\ny"}}, "argument 1 contains a newline"},
		{"empty", Spec{}, "empty command"},
		{"assignment as command", Spec{Argv: []string{"A=b", "x"}}, "env(1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.LogDir, tc.spec.Workdir = dir, dir
			_, err := Launch(context.Background(), h, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "rm -rf") {
				t.Errorf("the error echoes the value: %v", err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a rejected launch touched the host: %v", ents)
			}
		})
	}
}

// TestLaunchQuotingProperty: env values and flags made of shell
// metacharacters reach the server verbatim and never execute.
func TestLaunchQuotingProperty(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	canary := filepath.Join(dir, "pwned")
	pieces := []string{" ", "'", `"`, "$(touch " + canary + ")", "`touch " + canary + "`", ";", "&&", "|", "*", "?", "[a]",
		"~", "$HOME", "${X}", `\`, "!", "#", "<", ">", "(", ")", "{", "}", "%", "=", "-", "--rm", "é", "中"}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := range 12 {
		val := word()
		flags := []string{word(), word(), ""}
		argv := append([]string{"sh", "-c", `printf '%s\0' "$FLIGHTDECK_Q" "$@"`, "sh"}, flags...)
		logDir := filepath.Join(dir, "l"+strconv.Itoa(i))
		r, err := Launch(ctx, h, Spec{Preset: "q", Argv: argv, Env: map[string]string{"FLIGHTDECK_Q": val}, LogDir: logDir, Workdir: dir})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want := strings.Join(append([]string{val}, flags...), "\x00") + "\x00"
		waitFor(t, "output", func() bool {
			b, _ := os.ReadFile(r.Launch.LogPath)
			return len(b) >= len(want)
		})
		if got := readFile(t, r.Launch.LogPath); got != want {
			t.Fatalf("case %d: server saw %q, want %q", i, got, want)
		}
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatal("a value was executed by a shell")
	}
}

func TestKillTreeWithStubbornAndSetsidWorkers(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	cleanupTree(t, h, dir)
	// A parent with a worker that ignores SIGTERM and one that left the
	// session with setsid; the parent exits on TERM without waiting.
	script := `(trap '' TERM; exec sleep 301) & setsid sleep 302 & echo workers; exec sleep 303`
	r, err := Launch(ctx, h, Spec{Preset: "tree", Argv: []string{"sh", "-c", script}, LogDir: dir, Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var f event.ServerFound
	waitFor(t, "three workers", func() bool {
		f, err = Find(ctx, h, dir, 0, "")
		n := 0
		for _, p := range f.Tree {
			if p.Comm == "sleep" {
				n++
			}
		}
		return err == nil && n == 3
	})
	if !f.Running || f.How != ByPidfile || f.ServerPID == r.PID {
		t.Fatalf("found %+v, want running by pidfile with the server (not the wrapper) as ServerPID", f)
	}
	var setsidWorker int
	for _, p := range f.Tree {
		if p.SID != r.SID {
			setsidWorker = p.PID
		}
	}
	if setsidWorker == 0 {
		t.Fatalf("no worker outside the session in %+v", f.Tree)
	}
	res, err := Kill(ctx, h, f.Target, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Escalated) != 1 {
		t.Errorf("escalated %v, want exactly the TERM-ignoring worker", res.Escalated)
	}
	for _, p := range res.Members {
		if alive(p.PID) {
			t.Errorf("pid %d (%s) survived the kill", p.PID, p.Comm)
		}
	}
	if alive(setsidWorker) {
		t.Error("the setsid worker survived")
	}
	f, err = Find(ctx, h, dir, 0, "")
	if err != nil || f.Running {
		t.Fatalf("after kill: %+v %v", f, err)
	}
}

func startHandServer(t *testing.T, setsid bool, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	if setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestAdoptByPortAndHealth(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "FLIGHTDECK_TEST_LISTEN="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var f event.ServerFound
	var err error
	waitFor(t, "listener", func() bool {
		f, err = Find(ctx, h, t.TempDir(), port, "")
		return err == nil && f.Running
	})
	if f.How != ByPort || f.ServerPID != cmd.Process.Pid || f.Target.SID != cmd.Process.Pid {
		t.Fatalf("found %+v, want pid %d by port, leading its session", f, cmd.Process.Pid)
	}
	// /health says 503 (still loading); /v1/models answers.
	if p, err := Health(ctx, h, port); err != nil || p != "/v1/models" {
		t.Errorf("health: %q %v, want /v1/models", p, err)
	}
	if _, err := Kill(ctx, h, f.Target, time.Second); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := Health(ctx, h, port); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("health after kill: %v, want connection refused", err)
	}
}

func TestAdoptByProcessSparesTheUsersShell(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	// Started like `python -m sglang.launch_server &` from a shell: same
	// process group and session as the test, which must survive the kill.
	exe, _ := os.Executable()
	cmd := startHandServer(t, false, "env", "FLIGHTDECK_TEST_SLEEP=1", exe, "flightdeck-adopt-marker", "--port", "31999")
	// Another server on another port, and its own port's search: never ours.
	other := startHandServer(t, false, "env", "FLIGHTDECK_TEST_SLEEP=1", exe, "flightdeck-adopt-marker", "--port", "31998")
	var f event.ServerFound
	var err error
	waitFor(t, "process", func() bool {
		f, err = Find(ctx, h, t.TempDir(), 31999, "flightdeck-adopt-marker")
		return err == nil && f.Running
	})
	if f.How != ByProcess || f.ServerPID != cmd.Process.Pid || f.Target.PGID != 0 || f.Target.SID != 0 || f.Port != 31999 {
		t.Fatalf("found %+v, want pid %d by process match, group and session not led", f, cmd.Process.Pid)
	}
	if g, err := Find(ctx, h, t.TempDir(), 31997, "flightdeck-adopt-marker"); err != nil || g.Running || len(g.Others) != 0 {
		t.Errorf("a port no server claims: %+v %v", g, err)
	}
	if _, err := Kill(ctx, h, f.Target, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the adopted server exited cleanly; want killed by a signal")
	}
	if !alive(other.Process.Pid) {
		t.Error("the server on the other port was killed")
	}
	if !alive(os.Getpid()) {
		t.Fatal("unreachable")
	}
}

func TestKillStaleTargetSignalsNothing(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	cmd := startHandServer(t, true, "sleep", "300")
	pid := cmd.Process.Pid
	// Right pid, wrong start time: a reused pid must not be signalled.
	res, err := Kill(ctxT(t), h, event.KillTarget{PID: pid, StartTime: 1, PGID: pid, SID: pid}, time.Second)
	if err != nil || len(res.Members) != 0 {
		t.Fatalf("kill of a stale target: %+v %v", res, err)
	}
	if !alive(pid) {
		t.Fatal("a process with a different start time was killed")
	}
}

func TestParseFindIgnoresGarbage(t *testing.T) {
	f := parseFind([]byte("pidfile {not json\nexit x y\ntree 1 2\nlisten abc\nproc 5 1 5 5 S 99 sglang\nmatch 5\n"+
		"cmdline 5 python3\x1f-m\x1fsglang.launch_server\x1f--port\x1f31000\x1f\n"+
		"proc 8 1 8 8 S 99 bash\nmatch 8\nproc 10 9 9 9 S 99 grep\nmatch 10\nscript 9\nself 9\nself 3\nproc 3 1 3 3 S 9 python3\nmatch 3\n"+
		"proc 6 1 6 6 S 99 python3\nmatch 6\ncmdline 6 vllm\x1fserve\x1fm\x1f--port=8000\n"), 31000)
	if f.Record != nil || f.PidfileErr == nil {
		t.Errorf("bad pidfile: %+v", f)
	}
	if !f.Running || f.How != ByProcess || f.ServerPID != 5 || f.Target.PGID != 5 || f.Port != 31000 {
		t.Errorf("match: %+v", f)
	}
	// Two unrelated processes listening on the port: no guess; a server
	// and its child on its two sockets: the server.
	l2 := parseFind([]byte("listen 5\nlisten 7\nproc 5 1 5 5 S 99 sglang\nproc 7 1 7 7 S 99 python3\n"), 31000)
	if l2.Running || len(l2.Others) != 2 {
		t.Errorf("two listeners: %+v", l2)
	}
	l1 := parseFind([]byte("listen 5\nlisten 7\nproc 5 1 5 5 S 99 sglang\nproc 7 5 5 5 S 99 sglang\n"), 31000)
	if !l1.Running || l1.How != ByPort || l1.ServerPID != 5 || l1.Port != 31000 {
		t.Errorf("server and its worker listening: %+v", l1)
	}
	// Two servers claiming the wanted port: no guess.
	two := parseFind([]byte("proc 5 1 5 5 S 99 sglang\nmatch 5\ncmdline 5 x\x1f--port\x1f31000\n"+
		"proc 7 1 7 7 S 99 sglang\nmatch 7\ncmdline 7 x\x1f--port=31000\n"), 31000)
	if two.Running || len(two.Others) != 2 {
		t.Errorf("ambiguous: %+v", two)
	}
}

// TestScriptsParse runs sh -n on every script: a stray quote in an awk
// comment would otherwise only show up on a host.
func TestScriptsParse(t *testing.T) {
	for name, s := range map[string]string{"launch": launchScript, "find": findScript, "kill": killScript} {
		cmd := exec.Command("sh", "-n")
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s script: %v\n%s", name, err, out)
		}
	}
}

// TestLaunchKeepsSecretsOffCommandLines: a token in the environment
// reaches the server but no process's command line, where any user of the
// host could read it with ps.
// cmdRecorder records the command lines run on a host.
type cmdRecorder struct {
	remote.Host
	mu   sync.Mutex
	cmds []string
}

func (r *cmdRecorder) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	r.mu.Lock()
	r.cmds = append(r.cmds, cmd)
	r.mu.Unlock()
	return r.Host.Run(ctx, cmd, stdin)
}

func TestLaunchKeepsSecretsOffCommandLines(t *testing.T) {
	local := remote.NewLocal()
	defer local.Close()
	h := &cmdRecorder{Host: local}
	ctx := ctxT(t)
	dir := t.TempDir()
	cleanupTree(t, h, dir)
	r, err := Launch(ctx, h, Spec{Preset: "s", Argv: []string{"sh", "-c", `echo "token=$HF_TOKEN"; exec sleep 60`}, LogDir: dir, Workdir: dir,
		Env: map[string]string{"HF_TOKEN": "hf_s3cret value"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server's output", func() bool {
		b, _ := os.ReadFile(r.Launch.LogPath)
		return strings.Contains(string(b), "\n") || len(b) > 0
	})
	if got := readFile(t, r.Launch.LogPath); got != "token=hf_s3cret value\n" {
		t.Fatalf("server saw %q", got)
	}
	f, err := Find(ctx, h, dir, 0, "")
	if err != nil || len(f.Tree) < 2 {
		t.Fatalf("tree %+v %v", f.Tree, err)
	}
	for _, c := range h.cmds {
		if strings.Contains(c, "hf_s3cret") {
			t.Errorf("a command line carries the secret: %q", c)
		}
	}
	for _, p := range f.Tree {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if strings.Contains(string(b), "hf_s3cret") {
			t.Errorf("pid %d (%s) shows the secret on its command line: %q", p.PID, p.Comm, b)
		}
	}
}

func TestRedact(t *testing.T) {
	kept := map[string]bool{"NCCL_PROTO": true, "CUDA_VISIBLE_DEVICES": true, "NCCL_IB_QPS_PER_CONNECTION": true, "HF_HOME": true}
	got := Redact(map[string]string{"HF_TOKEN": "a", "AWS_ACCESS_KEY_ID": "b", "WANDB_KEY": "c", "hf_api_key": "d",
		"DB_PASSWORD": "e", "MY_PASS": "plainpass777", "DB_PWD": "f", "BASIC_AUTH": "g", "SESSION_COOKIE": "h",
		"SSH_PRIVATE": "i", "SENTRY_DSN": "j", "DB_CONN": "k", "PG_CONNECTION_STRING": "l",
		"NCCL_PROTO": "LL", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_IB_QPS_PER_CONNECTION": "4", "HF_HOME": "/data/hf"})
	for k, v := range got {
		if kept[k] == (v == "<redacted>") {
			t.Errorf("%s = %q", k, v)
		}
	}
	// The userinfo of a URL in any value, whatever the name.
	for in, want := range map[string]string{
		"postgres://u:DBPASSWORD42@db/x":           "postgres://<redacted>@db/x",
		"http://bob:Pr0xyPassw0rd@proxy:3128":      "http://<redacted>@proxy:3128",
		"https://ghp_tok@github.com/o/r.git":       "https://<redacted>@github.com/o/r.git",
		"http://a:p@ss@h/ and ftp://x:y@z/?q=a@b":  "http://<redacted>@h/ and ftp://<redacted>@z/?q=a@b",
		"http://proxy:3128, mailto:me@example.com": "http://proxy:3128, mailto:me@example.com",
	} {
		if got := Redact(map[string]string{"DATABASE_URL": in})["DATABASE_URL"]; got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// TestKillFenced: a fenced kill signals only while the driver lock file is
// absent or names this cockpit's token; a take-over (another token) stops
// it before the SIGTERM, and the server keeps running.
func TestKillFenced(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	dir := t.TempDir()
	cleanupTree(t, h, dir)
	lock := filepath.Join(dir, "driver.lock")
	const mine, theirs = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	for _, c := range []struct {
		name, file string // file: the lock's content, "" for none
		fenced     bool
	}{
		{"another cockpit holds the lock", `{"user":"bob","token":"` + theirs + `"}`, true},
		{"the lock is ours", `{"user":"alice","token":"` + mine + `"}`, false},
		{"no lock file", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(lock)
			if c.file != "" {
				if err := os.WriteFile(lock, []byte(c.file+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Launch(ctx, h, Spec{Preset: "sim", Argv: []string{"sleep", "60"}, LogDir: dir, Workdir: dir, At: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			target := event.KillTarget{PID: r.PID, StartTime: r.StartTime, PGID: r.PGID, SID: r.SID}
			_, err = KillFenced(ctx, h, target, time.Second, Fence{File: lock, Token: mine})
			if c.fenced {
				if !errors.Is(err, ErrFenced) || !alive(r.PID) {
					t.Fatalf("fenced kill: %v, alive %v; want ErrFenced and the server running", err, alive(r.PID))
				}
				if _, err := Kill(ctx, h, target, time.Second); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err != nil || alive(r.PID) {
				t.Fatalf("kill: %v, alive %v", err, alive(r.PID))
			}
		})
	}
	if _, err := KillFenced(ctx, h, event.KillTarget{PID: 1}, time.Second, Fence{File: lock, Token: "x'; rm -rf /"}); err == nil {
		t.Error("a token that is not hex digits was accepted")
	}
}

// TestLaunchWarnsOfAWorldWritableLogDir: an existing log directory that
// every user may write (no sticky bit) is left as it is, and said.
func TestLaunchWarnsOfAWorldWritableLogDir(t *testing.T) {
	h := remote.NewLocal()
	defer h.Close()
	ctx := ctxT(t)
	logDir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(logDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(logDir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	cleanupTree(t, h, logDir)
	r, err := Launch(ctx, h, Spec{Preset: "sim", Argv: []string{"true"}, LogDir: logDir, Workdir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], logDir+" is writable by every user") {
		t.Errorf("warnings %q, want one naming %s", r.Warnings, logDir)
	}
	if fi, err := os.Stat(logDir); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("the existing directory was changed: %v %v", fi.Mode(), err)
	}
}
