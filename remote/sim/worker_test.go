package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSMIWorkers: the fake nvidia-smi adds up the server and the live
// workers: a server's own worker stands for the server on its GPU, an
// orphan adds what it holds, a dead or silent worker holds nothing.
func TestSMIWorkers(t *testing.T) {
	dir := simDir(t, simConfig{GPUs: 8})
	far := time.Now().Add(time.Hour).UnixNano()
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: far, TP: 8, MemMiB: 126000, Load: 1})
	own, orphan, silent := sleeper(t), sleeper(t), sleeper(t)
	writeWorker(t, dir, workerState{PID: own, ServerPID: os.Getpid(), GPU: 0, Name: schedulerName(0), MemMiB: 125000, Heartbeat: far})
	writeWorker(t, dir, workerState{PID: orphan, ServerPID: 1, GPU: 2, Name: schedulerName(2), MemMiB: 5000, Heartbeat: far})
	writeWorker(t, dir, workerState{PID: deadPID(t), ServerPID: 1, GPU: 3, Name: schedulerName(3), MemMiB: 5000, Heartbeat: far})
	writeWorker(t, dir, workerState{PID: silent, ServerPID: 1, GPU: 4, Name: schedulerName(4), MemMiB: 5000,
		Heartbeat: time.Now().Add(-2 * staleAfter).UnixNano()})

	mem := func() []string {
		out, _ := runSMI(t, dir, "--query-gpu=memory.used", "--format=csv,noheader,nounits")
		return strings.Fields(out)
	}
	if got, want := mem(), []string{"125384", "126037", "131074", "126015", "126052", "126089", "126030", "126067"}; !slices.Equal(got, want) {
		t.Errorf("memory.used %v, want %v", got, want)
	}
	apps, _ := runSMI(t, dir, "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits")
	rows := strings.Split(strings.TrimSpace(apps), "\n")
	me := strconv.Itoa(os.Getpid())
	if len(rows) != 9 || rows[0] != strconv.Itoa(own)+", sglang::scheduler_TP0, 125384" ||
		rows[2] != me+", sglang::scheduler_TP2, 126074" || rows[3] != strconv.Itoa(orphan)+", sglang::scheduler_TP2, 5000" {
		t.Errorf("compute apps:\n%s", apps)
	}

	// The server exits: its own worker keeps what it held, now an orphan.
	writeState(t, dir, serverState{PID: os.Getpid(), Heartbeat: far, TP: 8, Exited: true})
	if got, want := mem(), []string{"125000", "0", "5000", "0", "0", "0", "0", "0"}; !slices.Equal(got, want) {
		t.Errorf("memory.used after the server exited %v, want %v", got, want)
	}
	table, _ := runSMI(t, dir)
	if !strings.Contains(table, strconv.Itoa(own)+"      C   sglang::scheduler_TP0") || strings.Contains(table, "No running processes") {
		t.Errorf("table lacks the orphaned worker:\n%s", table)
	}
}

// procStat returns the fields of /proc/PID/stat after the command name
// (field 3, the state, first).
func procStat(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// sessionID is field 6 of /proc/PID/stat.
func sessionID(t *testing.T, pid int) string { return procStat(t, pid)[3] }

// detached is a server launched by launchDetached.
type detached struct {
	pid  int
	log  string        // its stdout and stderr
	done chan struct{} // closed once it has exited and been waited for
	err  error         // its exit, once done is closed
}

// launchDetached starts the simulated host's flightdeck as a launcher
// does: a new session, output to a log in the sim directory. Every process
// it leads to (server, workers) is killed when the test ends.
func launchDetached(t *testing.T, h *Host, args ...string) *detached {
	t.Helper()
	d := &detached{log: filepath.Join(h.Dir, "logs", "sim-"+strings.ReplaceAll(t.Name(), "/", "_")+".log"), done: make(chan struct{})}
	lf, err := os.Create(d.log)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(filepath.Join(h.BinDir, CLIWrapper), append([]string{"sim", "server"}, args...)...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d.pid = cmd.Process.Pid
	go func() { d.err = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		syscall.Kill(-d.pid, syscall.SIGKILL)
		paths, _ := filepath.Glob(filepath.Join(h.Dir, workerGlob))
		for _, p := range paths {
			if w, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "worker-"), ".json")); err == nil && pidAlive(w) {
				syscall.Kill(w, syscall.SIGKILL)
			}
		}
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			t.Errorf("server %d not reaped", d.pid)
		}
	})
	return d
}

// wait waits up to 15 s for the server to exit.
func (d *detached) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-d.done:
		return d.err
	case <-time.After(15 * time.Second):
		t.Fatalf("server %d did not exit", d.pid)
		return nil
	}
}

func smiOut(t *testing.T, h *Host, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(h.BinDir, "nvidia-smi"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nvidia-smi %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestServerWorkersOutliveKill: the kill a launcher must get right. One
// worker left the session, one ignores SIGTERM, and the server exits on
// SIGTERM without signalling them: a TERM to the server's process group
// leaves both holding GPU memory, which nvidia-smi shows until they are
// killed.
func TestServerWorkersOutliveKill(t *testing.T) {
	h := startHost(t, Options{Dir: t.TempDir(), NoSSH: true, StartupDelay: 300 * time.Millisecond, TimeScale: 20})
	d := launchDetached(t, h, "--port", "0", "--no-auto-load",
		"--sim-workers", "2", "--sim-stubborn-worker", "--sim-setsid-worker", "--sim-orphan-workers")
	server := d.pid
	var ws []workerState
	waitFor(t, 30*time.Second, "ready, two workers holding memory", func() bool {
		b, _ := os.ReadFile(d.log)
		ws = readWorkers(h.Dir, time.Now())
		return bytes.Contains(b, []byte("ready to roll")) && len(ws) == 2 && ws[0].MemMiB > 125000 && ws[1].MemMiB > 125000
	})
	setsid, stubborn := ws[0], ws[1]
	if setsid.GPU != 0 || stubborn.GPU != 1 || setsid.ServerPID != server || stubborn.ServerPID != server {
		t.Fatalf("workers %+v, server %d", ws, server)
	}
	if got := h.WorkerPIDs(); !slices.Equal(got, []int{setsid.PID, stubborn.PID}) {
		t.Errorf("WorkerPIDs %v", got)
	}
	for _, w := range ws {
		if cl, _ := os.ReadFile("/proc/" + strconv.Itoa(w.PID) + "/cmdline"); !bytes.HasPrefix(cl, []byte(w.Name+"\x00")) {
			t.Errorf("worker %d cmdline %q, want it to start with %s", w.PID, cl, w.Name)
		}
		if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(w.PID) + "/comm"); string(comm) != "sglang::schedul\n" {
			t.Errorf("worker %d comm %q, want SGLang's truncated name", w.PID, comm)
		}
	}
	if sid := sessionID(t, setsid.PID); sid == sessionID(t, server) || sid != strconv.Itoa(setsid.PID) {
		t.Errorf("setsid worker in session %s, server in %s", sid, sessionID(t, server))
	}
	if sessionID(t, stubborn.PID) != sessionID(t, server) || procStat(t, stubborn.PID)[2] != strconv.Itoa(server) {
		t.Errorf("stubborn worker not in the server's session and group")
	}

	// While the server runs, its workers hold GPUs 0 and 1, itself 2..7.
	apps := smiOut(t, h, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
	var pids []string
	for _, r := range strings.Split(strings.TrimSpace(apps), "\n") {
		f := strings.Split(r, ", ")
		if mem, _ := strconv.Atoi(f[1]); mem < 125000 {
			t.Errorf("compute app %q holds too little", r)
		}
		pids = append(pids, f[0])
	}
	s := strconv.Itoa(server)
	if want := []string{strconv.Itoa(setsid.PID), strconv.Itoa(stubborn.PID), s, s, s, s, s, s}; !slices.Equal(pids, want) {
		t.Errorf("compute apps %v, want %v", pids, want)
	}

	// TERM to the whole process group, as a careless kill does.
	if err := syscall.Kill(-server, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(t); err != nil {
		t.Errorf("server exit on SIGTERM: %v", err)
	}
	time.Sleep(3 * workerBeat) // long enough for a worker that obeyed TERM to be gone
	if got := h.WorkerPIDs(); !slices.Equal(got, []int{setsid.PID, stubborn.PID}) {
		t.Fatalf("live workers after the group TERM: %v, want both", got)
	}
	apps = smiOut(t, h, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits")
	rows := strings.Split(strings.TrimSpace(apps), "\n")
	if len(rows) != 2 {
		t.Errorf("compute apps after the server died:\n%s", apps)
	}
	for i, r := range rows {
		f := strings.Split(r, ", ")
		if mem, _ := strconv.Atoi(f[len(f)-1]); f[0] != strconv.Itoa(ws[i].PID) || mem < 125000 {
			t.Errorf("row %q, want worker %d holding memory", r, ws[i].PID)
		}
	}
	used := strings.Fields(smiOut(t, h, "--query-gpu=memory.used", "--format=csv,noheader,nounits"))
	if u0, _ := strconv.Atoi(used[0]); u0 < 125000 || used[2] != "0" {
		t.Errorf("memory.used %v: want the orphans' memory on GPUs 0 and 1 only", used)
	}

	for _, w := range ws {
		syscall.Kill(w.PID, syscall.SIGKILL)
	}
	killed := time.Now()
	waitFor(t, staleAfter+2*time.Second, "memory freed", func() bool {
		return smiOut(t, h, "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0,1") == "0\n0\n"
	})
	if d := time.Since(killed); d > staleAfter+time.Second {
		t.Errorf("memory freed %v after the kill, want within the stale window", d)
	}
}

// TestServerTermsWorkers: without --sim-orphan-workers a SIGTERM to the
// server (not its group) reaches its workers; a stubborn one survives, and
// Host.Close still ends it.
func TestServerTermsWorkers(t *testing.T) {
	h := startHost(t, Options{NoSSH: true, StartupDelay: 300 * time.Millisecond, TimeScale: 20})
	d := launchDetached(t, h, "--port", "0", "--no-auto-load", "--sim-workers", "2", "--sim-stubborn-worker")
	server := d.pid
	var ws []workerState
	waitFor(t, 30*time.Second, "ready with two workers", func() bool {
		b, _ := os.ReadFile(d.log)
		ws = readWorkers(h.Dir, time.Now())
		return bytes.Contains(b, []byte("ready to roll")) && len(ws) == 2
	})
	if err := syscall.Kill(server, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(t); err != nil {
		t.Errorf("server exit on SIGTERM: %v", err)
	}
	waitFor(t, 5*time.Second, "the obedient worker gone", func() bool { return !pidAlive(ws[0].PID) })
	if !pidAlive(ws[1].PID) {
		t.Fatal("the stubborn worker obeyed SIGTERM")
	}
	if b, _ := os.ReadFile(d.log); !bytes.HasSuffix(b, []byte("Finished server process ["+strconv.Itoa(server)+"]\n")) {
		t.Errorf("no graceful shutdown in the log:\n%s", b)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if pidAlive(ws[1].PID) {
		t.Errorf("stubborn worker %d still running after Close", ws[1].PID)
	}
}

// TestCLIWrapper: the simulated host's flightdeck runs `sim server` and
// nothing else; through SSH, with the launcher's command shape (setsid -f,
// env words, output appended to a log), it finds the sim directory: its
// repo in the traceback paths, its GPU state for nvidia-smi.
func TestCLIWrapper(t *testing.T) {
	h := startHost(t, Options{StartupDelay: 300 * time.Millisecond, TimeScale: 50})
	c := dial(t, h)
	out, err := run(t, c, "flightdeck demo")
	if err == nil || !strings.Contains(err.Error(), "status 2") || out != cliUsage+"\n" {
		t.Errorf("flightdeck demo on the sim host: %q %v", out, err)
	}
	launch := `setsid -f sh -c 'echo $$ > run/launch.pid; "$@"; echo $? > run/launch.exit' sh ` +
		`env NCCL_PROTO=LL flightdeck sim server --model-path /shared/kimi-k2.5-int4 --tp-size 8 --port ` + strconv.Itoa(h.ServerPort) +
		` --host 127.0.0.1 --sim-fail oom >> logs/sim-20261129-101500.log 2>&1 < /dev/null`
	if out, err := run(t, c, launch); err != nil {
		t.Fatalf("launch: %v %s", err, out)
	}
	waitFor(t, 30*time.Second, "the exit file", func() bool {
		b, _ := os.ReadFile(filepath.Join(h.Dir, "run", "launch.exit"))
		return string(b) == "1\n"
	})
	log, _ := os.ReadFile(filepath.Join(h.Dir, "logs", "sim-20261129-101500.log"))
	if f := classify(t, string(log)); f.Class != "oom" {
		t.Errorf("classified %+v", f)
	}
	if !bytes.Contains(log, []byte(`File "`+filepath.Join(h.RepoPath, "python", "sglang", "srt", "managers", "scheduler.py"))) {
		t.Errorf("the server did not run from the sim's repo:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, stateFile)); err != nil {
		t.Errorf("no GPU state published: %v", err)
	}
}
