package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Exit statuses of the server commands, for scripts.
const (
	exitNoServer = 3   // status/kill: no server running
	exitTimeout  = 124 // launch: not ready in --timeout (like timeout(1))
)

// serverFlags are the options shared by the server subcommands.
type serverFlags struct {
	ssh        sshFlags
	nvidiaSMI  string
	logDir     string
	yes        bool
	grace      time.Duration
	gpuTimeout time.Duration
	force      bool
}

func (f *serverFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	addSSHFlags(fl, &f.ssh, true)
	fl.StringVar(&f.nvidiaSMI, "nvidia-smi", "nvidia-smi", "nvidia-smi command on the host")
	fl.StringVar(&f.logDir, "log-dir", "", "directory on the host for per-launch logs and the pidfile (default: the host's log_dir in the config, else ~/.flightdeck/logs)")
}

func (f *serverFlags) addKill(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "do not ask for confirmation")
	fl.DurationVar(&f.grace, "grace", server.DefaultGrace, "time between SIGTERM and SIGKILL")
	fl.DurationVar(&f.gpuTimeout, "gpu-timeout", 2*time.Minute, "how long to wait for the GPU memory to be freed")
	fl.BoolVar(&f.force, "force", false, "act even while a cockpit drives the host (its driver lock is held)")
}

// serverHost is a host the server commands reach: the configuration, the
// host's effective settings and the connection.
type serverHost struct {
	cfg    *config.Config
	target config.Host
	host   remote.Host
}

// dial loads the config and connects to alias.
func (f *serverFlags) dial(ctx context.Context, alias string) (*serverHost, error) {
	if f.grace < 0 || f.gpuTimeout < 0 {
		return nil, errors.New("--grace and --gpu-timeout must not be negative")
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	target := cfg.Host(alias)
	if f.logDir != "" {
		target.LogDir = f.logDir
	}
	host, err := openHost(ctx, target.Target, f.ssh)
	if err != nil {
		return nil, err
	}
	return &serverHost{cfg: cfg, target: target, host: host}, nil
}

// attach is what a session of these commands acts on: the host with the
// flags' nvidia-smi, grace and GPU timeout, and as the default {tp} every
// GPU of the host, as nvidia-smi counts them (asked once, when needed).
func (f *serverFlags) attach(ctx context.Context, h *serverHost) sessions.AttachOptions {
	var gpus int
	var once sync.Once
	count := func() int {
		once.Do(func() {
			qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if g, err := gpu.QueryGPUMemory(qctx, h.host, f.nvidiaSMI); err == nil {
				gpus = len(g)
			}
		})
		return gpus
	}
	return sessions.AttachOptions{Host: h.host, Target: h.target, GPUProgram: f.nvidiaSMI, Grace: f.grace, GPUTimeout: f.gpuTimeout, GPUCount: count}
}

// openSession connects to alias and attaches a session for one action of
// the CLI: no journal, and it acts only while no cockpit drives the host
// (its driver lock, next to the pidfile, is held and fresh: a kill or
// launch from here would pull the server from under its user), unless
// --force. The returned function closes it.
func (f *serverFlags) openSession(ctx context.Context, alias string) (*sessions.Session, func(), error) {
	h, err := f.dial(ctx, alias)
	if err != nil {
		return nil, nil, err
	}
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: sessions.JournalOptions{Off: true},
		Driver: sessions.DriverOptions{Mode: sessions.DriverCheck, Force: f.force}})
	if err == nil {
		err = s.Attach(ctx, f.attach(ctx, h))
	}
	if err != nil {
		h.host.Close()
		return nil, nil, err
	}
	return s, func() {
		s.Close(context.WithoutCancel(ctx), nil)
		h.host.Close()
	}, nil
}

// openFound is openSession plus a first look for the server.
func (f *serverFlags) openFound(ctx context.Context, alias string) (*sessions.Session, event.ServerFound, func(), error) {
	s, done, err := f.openSession(ctx, alias)
	if err != nil {
		return nil, event.ServerFound{}, nil, err
	}
	found, err := s.Control().Find(ctx)
	if err != nil {
		done()
		return nil, found, nil, err
	}
	return s, found, done, nil
}

func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		RunE:  runGroup,
		Short: "Launch, kill, inspect the inference server on a host (what the cockpit's K and L keys do)",
		Long: `server drives the inference server on HOST (an SSH target, an alias from
~/.ssh/config or the flightdeck config, or "local"): launches are detached
(setsid, a per-launch log, a pidfile) so they survive the SSH connection;
kills take the whole process tree and wait for the GPU memory.

Exit statuses: 0 success; 1 failure; 3 no server running (status, kill);
124 launch not ready within --timeout.`,
	}
	cmd.AddCommand(newServerStatusCmd(), newServerLaunchCmd(), newServerKillCmd(), newServerLogsCmd())
	cmd.AddCommand(newServerRepeatCmd())
	return cmd
}

// foundHow says how a server was found, for confirmations: whose it is
// matters before killing it.
func foundHow(f event.ServerFound) string {
	switch f.How {
	case server.ByPidfile:
		return "launched by flightdeck"
	case server.ByPort:
		return fmt.Sprintf("listening on port %d, not launched by flightdeck", f.Port)
	case server.ByProcess:
		return fmt.Sprintf("command line with --port %d, not launched by flightdeck", f.Port)
	}
	return f.How
}

func pidList(ps []event.Process) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, " %d", p.PID)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// confirm asks a yes/no question on the terminal; without a terminal it
// refuses, naming the flag that skips it.
func confirm(ctx context.Context, question string) error {
	if !term.IsTerminal(os.Stdin.Fd()) {
		return fmt.Errorf("%s — no terminal to confirm on: pass --yes", question)
	}
	fmt.Fprintf(os.Stderr, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done(): // Ctrl-C: no need to press Enter too
		fmt.Fprintln(os.Stderr)
		return ctx.Err()
	case line := <-answer:
		if !strings.HasSuffix(line, "\n") {
			fmt.Fprintln(os.Stderr) // end of input (Ctrl-D): end the prompt's line
		}
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return errors.New("not confirmed")
		}
	}
	return nil
}
