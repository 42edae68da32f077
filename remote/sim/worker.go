package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Worker processes stand for SGLang's per-rank scheduler processes: the
// children that really hold the GPU memory, and that a kill of the server
// must reach. They are what makes killing a server hard: one stuck in an
// NCCL call ignores SIGTERM, one may have left the process group, and all
// of them survive a parent that dies without taking them along.

// workerProc is a worker this server spawned.
type workerProc struct {
	proc *os.Process
	done chan struct{} // closed once it has exited and been waited for
}

// spawnWorkers starts the workers --sim-workers asks for: worker k is TP
// rank k's scheduler, on GPU k.
func (s *server) spawnWorkers() error {
	o := s.opt
	if o.workers == 0 {
		return nil
	}
	exe := s.env.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return err
		}
	}
	env := roleEnv(os.Environ(), RoleWorker, s.env.dir)
	for k := 0; k < o.workers; k++ {
		// argv[0] is the process name, as SGLang's setproctitle makes it:
		// /proc/PID/cmdline (ps -f, pgrep -f) shows it.
		args := []string{schedulerName(k), "--gpu", strconv.Itoa(k), "--server-pid", strconv.Itoa(os.Getpid())}
		if o.stubbornWorker && k == o.workers-1 {
			args = append(args, "--stubborn")
		}
		cmd := &exec.Cmd{Path: exe, Args: args, Env: env,
			Stdout: osFile(s.env.stdout), Stderr: osFile(s.env.stderr),
			SysProcAttr: &syscall.SysProcAttr{Setsid: o.setsidWorker && k == 0}}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("worker %d: %w", k, err)
		}
		w := &workerProc{proc: cmd.Process, done: make(chan struct{})}
		go func() { cmd.Wait(); close(w.done) }()
		s.workers = append(s.workers, w)
	}
	return nil
}

// osFile passes w on to a child when it is a file (the log the server
// writes to); anything else becomes /dev/null.
func osFile(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		return f
	}
	return nil
}

// roleEnv is environ with the role variables set to role and dir.
func roleEnv(environ []string, role, dir string) []string {
	out := make([]string, 0, len(environ)+2)
	for _, e := range environ {
		if k, _, _ := strings.Cut(e, "="); k != EnvRole && k != EnvDir {
			out = append(out, e)
		}
	}
	return append(out, EnvRole+"="+role, EnvDir+"="+dir)
}

// endWorkers sends sig to the workers still running and waits up to 2 s
// for them to exit; a stubborn one may not. With --sim-orphan-workers it
// does nothing: the workers outlive the server.
func (s *server) endWorkers(sig syscall.Signal) {
	if s.opt.orphanWorkers {
		return
	}
	for _, w := range s.workers {
		w.proc.Signal(sig) // os.Process knows when it was reaped: no stray kill of a reused pid
	}
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for _, w := range s.workers {
		select {
		case <-w.done:
		case <-deadline.C:
			return
		}
	}
}

// foreignMemory is the memory, by GPU, that live workers of other servers
// (orphans) hold in this sim directory.
func (s *server) foreignMemory() map[int][]foreignMiB {
	out := map[int][]foreignMiB{}
	me := os.Getpid()
	for _, w := range readWorkers(s.env.dir, time.Now()) {
		if w.ServerPID != me && w.PID != me && w.MemMiB > 0 {
			out[w.GPU] = append(out[w.GPU], foreignMiB{pid: w.PID, memMiB: w.MemMiB})
		}
	}
	return out
}

func sumMiB(fs []foreignMiB) int64 {
	var n int64
	for _, f := range fs {
		n += f.memMiB
	}
	return n
}

// workerOptions are a worker's flags (set by spawnWorkers, not by users).
type workerOptions struct {
	gpu       int
	serverPID int
	stubborn  bool
}

func parseWorkerArgs(args []string) (workerOptions, error) {
	o := workerOptions{gpu: -1}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--stubborn":
			o.stubborn = true
		case "--gpu", "--server-pid":
			if i+1 >= len(args) {
				return o, fmt.Errorf("%s needs a value", a)
			}
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 0 {
				return o, fmt.Errorf("%s %q", a, args[i])
			}
			if a == "--gpu" {
				o.gpu = n
			} else {
				o.serverPID = n
			}
		default:
			return o, fmt.Errorf("unexpected argument %q", a)
		}
	}
	if o.gpu < 0 || o.serverPID <= 0 {
		return o, errors.New("want --gpu N --server-pid PID")
	}
	return o, nil
}

// workerBeat is how often a worker rewrites its state file (wall time).
const workerBeat = 200 * time.Millisecond

// runWorker is one worker process. While its server lives it holds the
// server's per-GPU memory on its GPU; after that it keeps what it holds
// until it is signalled (a stubborn worker ignores SIGTERM, SIGINT and
// SIGHUP), the sim's owner is gone, or the sim directory is removed.
func runWorker(args []string, dir string) int {
	o, err := parseWorkerArgs(args)
	if err == nil && dir == "" {
		err = errors.New("no sim directory (" + EnvDir + ")")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sglang scheduler: %v\n", err)
		return 2
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if o.stubborn {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	} else {
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer stop()
	}
	if cfg, err := readConfig(dir); err == nil && cfg.OwnerPID > 0 {
		go watchOwner(ctx, cfg.OwnerPID, time.Second, stop)
	}
	st := workerState{PID: os.Getpid(), ServerPID: o.serverPID, GPU: o.gpu, Name: schedulerName(o.gpu)}
	// The process name ps and pgrep show (comm, 15 bytes), as setproctitle
	// sets it for SGLang's schedulers; argv[0] already carries the full name.
	os.WriteFile("/proc/self/comm", []byte(st.Name[:min(len(st.Name), 15)]), 0)
	path := workerFile(dir, st.PID)
	defer os.Remove(path)
	t := time.NewTicker(workerBeat)
	defer t.Stop()
	for {
		now := time.Now()
		if sv := readServerView(dir, now); sv.Alive && sv.PID == o.serverPID {
			st.MemMiB = sv.MemMiB
		}
		st.Heartbeat = now.UnixNano()
		b, _ := json.Marshal(st)
		if err := writeFileAtomic(path, b, 0o644); errors.Is(err, fs.ErrNotExist) {
			return 0 // the sim directory is gone
		}
		select {
		case <-ctx.Done():
			return 0
		case <-t.C:
		}
	}
}
