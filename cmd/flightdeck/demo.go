package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui"
)

type demoFlags struct {
	gpus       int
	gpuCapture string
	replayLog  string
	profile    string
	eagle      bool
	interval   time.Duration
	dir        string
	color      colorFlags
	faults     []string
	journal    journalFlags
	lock       lockFlags
	join       bool
	gpu        gpuFlags
	history    int
	// timeScale and startupDelay pace the simulated server (as flightdeck
	// sim host's flags): a bisect's dozens of launches in minutes.
	timeScale    float64
	startupDelay time.Duration
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Open the cockpit on a built-in simulated 8-GPU host (no GPU needed)",
		Long: `demo builds a simulated GPU host in a temporary directory — a fake nvidia-smi
for N H200-like GPUs, a fake SGLang server whose log and tok/s follow the
reference numbers (62.5 tok/s untuned, 89 with the NCCL profile, x0.92 at the
regressing commit), and a git checkout with that regression in its history
(--history commits after the checkout's baseline, three of which fail to
launch as a broken build does; --history 3 is the short story) —
serves it through an SSH server on 127.0.0.1 with throwaway keys, launches
the simulated server with the "sim" preset (env profile --profile, default
none) and opens the cockpit on it through the same SSH client path as
connect.

GPUs are sampled as on a real host: the cockpit uploads itself into the sim
directory and runs flightdeck agent over SSH, whose NVML there is a fake
library answering from the same GPU model as the fake nvidia-smi (the header
says "GPU agent"; --sampler nvidia-smi shows the fallback path).

Try: L, choose the nccl-ll-ring profile, Enter, y — the server is killed,
relaunched, goes ready, and the tok/s climbs from 62.5 to 89.

Everything is removed when you quit, except the session's journal (its
path is printed at exit): flightdeck journal ls, flightdeck replay FILE.

Pair debugging: in another terminal (or tmux pane), flightdeck demo --join
opens a second cockpit on the same simulated host. One cockpit drives (its
keys act); the other is read-only and says who drives until it takes over
(--take-over) or the driver quits. flightdeck follow shows the driver's
journal as it is written.`,
		Example: `  flightdeck demo
  flightdeck demo --gpus 64
  flightdeck demo --profile nccl-ll-ring
  flightdeck demo --history 3         # the short git story: typo fix, regression, CI commit
  flightdeck demo --gpu-capture remote/sim/captures/linux-x86_64__nvidia-h200__590.48.01.txt
  flightdeck demo --replay-log server.log
  flightdeck demo --fault lost=6 --fault pcie=3 --fault thermal=4
  flightdeck demo --fault xid=3:79    # NVML reports Xid 79 on GPU 3
  flightdeck demo --join              # a pair's second cockpit, in another pane
  flightdeck demo --join --take-over  # ... that drives`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.join {
				for _, name := range []string{"gpus", "gpu-capture", "replay-log", "profile", "eagle", "fault", "history", "time-scale", "startup-delay"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--join: --%s belongs to the demo that serves the host, not to a joining cockpit", name)
					}
				}
			}
			return runDemo(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.gpus, "gpus", 8, fmt.Sprintf("number of simulated GPUs (1-%d)", sim.MaxGPUs))
	fl.StringVar(&f.gpuCapture, "gpu-capture", "", "replay the load-section --query-gpu CSV of a real nvidia-smi capture")
	fl.StringVar(&f.replayLog, "replay-log", "", "make the simulated server replay a real log file")
	fl.StringVar(&f.profile, "profile", "none", "env profile of the first launch (none: 62.5 tok/s; nccl-ll-ring: 89, the seeds' NCCL tuning)")
	fl.BoolVar(&f.eagle, "eagle", false, "simulate EAGLE-3 2-step speculative decoding: accept length shown; 94 tok/s at the baseline commit, about 60 at the regressing HEAD (as in the seeds)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	f.gpu.add(fl)
	fl.IntVar(&f.history, "history", sim.DefaultHistory, fmt.Sprintf("commits on the checkout's upstream after its baseline (%d-%d): the regression, commits that fail to launch, unrelated work; 3 is the short story", sim.MinHistory, sim.MaxHistory))
	fl.Float64Var(&f.timeScale, "time-scale", 1, "run the simulated server's durations this many times faster (tests; a bisect of the history in minutes)")
	fl.DurationVar(&f.startupDelay, "startup-delay", 2500*time.Millisecond, "the simulated server's start-up time, before --time-scale")
	fl.StringVar(&f.dir, "dir", "", "build the simulated host here and keep it (default: a temporary directory, removed at exit)")
	fl.StringArrayVar(&f.faults, "fault", nil, "inject a fault (repeatable): lost=GPU, pcie=GPU (Gen4 x8), thermal=GPU, handle-lost=GPU, stall, xid=GPU:CODE (an Xid NVML reports, e.g. xid=3:79)")
	addColorFlags(fl, &f.color)
	addJournalFlags(fl, &f.journal)
	addLockFlags(fl, &f.lock)
	fl.BoolVar(&f.join, "join", false, "open a second cockpit on a running demo's simulated host (the only one running, or the one in --dir): read-only while the first drives")
	return cmd
}

func runDemo(ctx context.Context, f demoFlags) error {
	if f.gpus < 1 || f.gpus > sim.MaxGPUs {
		return fmt.Errorf("--gpus %d: want 1 to %d", f.gpus, sim.MaxGPUs)
	}
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	}
	if f.history < sim.MinHistory || f.history > sim.MaxHistory {
		return fmt.Errorf("--history %d: want %d to %d", f.history, sim.MinHistory, sim.MaxHistory)
	}
	if err := f.gpu.check(); err != nil {
		return err
	}
	for flag, p := range map[string]string{"--gpu-capture": f.gpuCapture, "--replay-log": f.replayLog} {
		if p == "" {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s %s: not a regular file", flag, p)
		}
	}
	faults, err := parseFaults(f.faults, f.gpus)
	if err != nil {
		return err
	}
	for i := range faults.Xids {
		faults.Xids[i].At = time.Now().UnixNano() // the Xid happens now: an agent restarted later does not see it again
	}
	if err := f.journal.check(); err != nil {
		return err
	}
	if err := needTerminal(); err != nil {
		return err
	}
	label := "demo"
	server := "sglang" // the simulated server writes SGLang's format
	if f.replayLog != "" {
		server = "" // a replayed log may be vLLM's: infer it
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if _, err := cfg.ResolveProfile(f.profile); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	var joined demoSite
	if f.join {
		if joined, err = findDemo(f.dir); err != nil {
			return err
		}
	}
	lc := sessions.LiveConfig{Interval: f.interval, Server: server}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	// The journal is opened before the screen: a refused one (another
	// cockpit writes it) is said plainly.
	s, err := sessions.Open(sessions.Options{Name: label, Config: cfg, Journal: f.journal.options(), Version: versionString(),
		Header: event.SessionHeader{Host: "simulated host", Label: label}, Driver: f.lock.driving()})
	if err != nil {
		return err
	}
	live := func(ctx context.Context) error {
		// Building the host takes a moment on a busy laptop: say so on the
		// screen, which is already open.
		s.Publish(event.Event{At: time.Now(), Data: event.ConnState{Host: label, Conn: event.Connecting, Since: time.Now()}})
		site := joined
		if !f.join {
			h, err := sim.Start(ctx, sim.Options{
				Dir:          f.dir,
				GPUs:         f.gpus,
				GPUCapture:   f.gpuCapture,
				ReplayLog:    f.replayLog,
				Eagle:        f.eagle,
				History:      f.history,
				TimeScale:    f.timeScale,
				StartupDelay: f.startupDelay,
			})
			if err != nil {
				return fmt.Errorf("start the simulated host: %w", err)
			}
			defer h.Close()
			if err := h.SetFaults(faults); err != nil {
				return fmt.Errorf("inject faults: %w", err)
			}
			site = siteOf(h, f)
			// A second cockpit finds the host here (demo --join).
			if err := site.write(); err != nil {
				return fmt.Errorf("write the demo's join file: %w", err)
			}
		}
		// The real SSH client path, pinned to the sim's throwaway key and
		// known_hosts so that the user's ~/.ssh is neither read nor written.
		host, err := remote.DialSSH(ctx, site.Target, remote.SSHOptions{
			ConfigFile:      os.DevNull,
			IdentityFiles:   []string{site.Identity},
			KnownHostsFiles: []string{site.KnownHosts},
			NoAgent:         true,
		})
		if err != nil {
			return fmt.Errorf("connect to the simulated host: %w", err)
		}
		defer host.Close()
		// The driver lock, next to the server's pidfile: the first demo
		// drives, a joining one watches until it takes over. The journal
		// is on this machine, which is the simulated host.
		if err := s.Attach(ctx, sessions.AttachOptions{Host: host, Target: site.config(), Repo: site.Repo, OnHost: true,
			NoProcessMatch: true, BenchTarget: "simulated host"}); err != nil {
			return err
		}
		if f.join {
			// The server is the first demo's, and so is the host: when
			// that demo quits, this cockpit ends too, saying why,
			// rather than reconnecting forever.
			lctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			go func() {
				t := time.NewTicker(time.Second)
				defer t.Stop()
				for {
					select {
					case <-lctx.Done():
						return
					case <-t.C:
						if !alive(site.PID) {
							cancel(errDemoGone)
							return
						}
					}
				}
			}()
			err := s.Run(lctx, lc, func() { s.RecordSinceLast(lctx, sessions.SinceOptions{}) })
			if errors.Is(context.Cause(lctx), errDemoGone) {
				s.Quiet() // the lock went with the host: its release cannot work
				return fmt.Errorf("the demo serving the simulated host (pid %d) has quit: the host is gone", site.PID)
			}
			return err
		}
		// The first launch goes through the same path as the L key; what
		// changed since the last demo in this --dir is compared beside it.
		return s.Run(ctx, lc, func() { s.RecordSinceLast(ctx, sessions.SinceOptions{}) }, func() {
			plan, err := s.Plan(s.Request())
			if err == nil {
				_, err = s.Launch(ctx, plan)
			}
			if err != nil && ctx.Err() == nil {
				s.Publish(event.Event{At: time.Now(), Data: event.LogNotice{Path: "launch", Class: event.NoticeInaccessible, Text: "first launch failed: " + err.Error()}})
			}
		})
	}
	opts := cockpitOptions(tui.Options{Label: label, Host: "simulated host", Color: f.color.Mode(), ServesHost: !f.join}, s, true)
	return runCockpit(ctx, s, opts, live)
}

// errDemoGone ends a joined demo whose serving demo has quit.
var errDemoGone = errors.New("the serving demo quit")

// parseFaults reads --fault values: "lost=N", "pcie=N", "thermal=N",
// "handle-lost=N" (N a GPU index below gpus), "xid=N:CODE" and "stall".
func parseFaults(specs []string, gpus int) (sim.Faults, error) {
	var fs sim.Faults
	for _, spec := range specs {
		kind, arg, hasArg := strings.Cut(spec, "=")
		if kind == "xid" {
			x, err := parseXidFault(spec, arg, hasArg, gpus)
			if err != nil {
				return fs, err
			}
			fs.Xids = append(fs.Xids, x)
			continue
		}
		if kind == "stall" {
			if hasArg {
				return fs, fmt.Errorf("--fault %q: stall takes no GPU (it stalls nvidia-smi and NVML themselves)", spec)
			}
			fs.Stall = true
			continue
		}
		gpu, err := strconv.Atoi(arg)
		if !hasArg || err != nil {
			return fs, fmt.Errorf("--fault %q: want lost=GPU, pcie=GPU, thermal=GPU, handle-lost=GPU, xid=GPU:CODE or stall", spec)
		}
		if gpu < 0 || gpu >= gpus {
			return fs, fmt.Errorf("--fault %q: GPU %d does not exist (--gpus %d: 0 to %d)", spec, gpu, gpus, gpus-1)
		}
		switch kind {
		case "lost":
			fs.LostGPUs = append(fs.LostGPUs, gpu)
		case "pcie":
			fs.PCIeDegradedGPUs = append(fs.PCIeDegradedGPUs, gpu)
		case "thermal":
			fs.ThermalGPUs = append(fs.ThermalGPUs, gpu)
		case "handle-lost":
			fs.HandleLostGPU = &gpu
		default:
			return fs, fmt.Errorf("--fault %q: unknown fault %q", spec, kind)
		}
	}
	return fs, nil
}

// parseXidFault reads "xid=GPU:CODE" (an Xid NVML reports for GPU, e.g.
// xid=3:79).
func parseXidFault(spec, arg string, hasArg bool, gpus int) (sim.XidFault, error) {
	g, c, ok := strings.Cut(arg, ":")
	gpu, err1 := strconv.Atoi(g)
	code, err2 := strconv.ParseUint(c, 10, 32)
	if !hasArg || !ok || err1 != nil || err2 != nil || code == 0 {
		return sim.XidFault{}, fmt.Errorf("--fault %q: want xid=GPU:CODE, e.g. xid=3:79", spec)
	}
	if gpu < 0 || gpu >= gpus {
		return sim.XidFault{}, fmt.Errorf("--fault %q: GPU %d does not exist (--gpus %d: 0 to %d)", spec, gpu, gpus, gpus-1)
	}
	return sim.XidFault{GPU: gpu, Code: code}, nil
}
