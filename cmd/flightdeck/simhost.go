package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
)

// simHostFlags are the options of `flightdeck sim host`.
type simHostFlags struct {
	dir          string
	history      int
	gpus         int
	profile      string
	timeScale    float64
	startupDelay time.Duration
	seed         int64
}

// Files `flightdeck sim host` writes into the sim directory for the CLI.
const (
	simHostConfigFile = "flightdeck.toml" // a [hosts.sim] table
	simHostSSHConfig  = "ssh_config"      // identity and known_hosts of the throwaway keys
	simHostAlias      = "sim"             // the host's name in simHostConfigFile
)

func newSimHostCmd() *cobra.Command {
	var f simHostFlags
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Serve the demo's simulated GPU host over SSH, without the cockpit, for the CLI",
		Long: `sim host builds and serves the simulated host that flightdeck demo opens the
cockpit on — 127.0.0.1's SSH server with throwaway keys, the fake GPUs and
nvidia-smi, the simulated SGLang server ("sim" preset) and the checkout
whose upstream holds --history commits (the regression "Fix PCG MoE
Error", three commits that fail to launch, origin/main on top) — and
prints its SSH target, known_hosts line and repository.

It writes DIR/flightdeck.toml, whose [hosts.sim] table names the host,
and DIR/ssh_config with its identity and known_hosts, so that every
command that takes a HOST works on it:

  flightdeck --config DIR/flightdeck.toml server launch sim -F DIR/ssh_config

(the exact lines are printed). Launches take seconds. It runs until
SIGINT or SIGTERM, then stops the servers launched on it; without --dir
the directory is temporary and removed.`,
		Example: `  flightdeck sim host
  flightdeck sim host --dir /tmp/simhost --history 64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			return runSimHost(ctx, cmd.OutOrStdout(), cfg, f, nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "build the simulated host here and keep it (default: a temporary directory, removed at exit)")
	fl.IntVar(&f.history, "history", sim.DefaultHistory, fmt.Sprintf("commits on the checkout's upstream after its baseline (%d-%d)", sim.MinHistory, sim.MaxHistory))
	fl.IntVar(&f.gpus, "gpus", 8, fmt.Sprintf("number of simulated GPUs (1-%d)", sim.MaxGPUs))
	fl.StringVar(&f.profile, "profile", "none", "the host's env profile in flightdeck.toml (none: 62.5 tok/s; nccl-ll-ring: 89)")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "run the simulated server's durations this many times faster (tests)")
	fl.DurationVar(&f.startupDelay, "startup-delay", 2500*time.Millisecond, "the simulated server's start-up time")
	fl.Int64Var(&f.seed, "seed", 0, "reproducible noise of the simulated server (0: random)")
	return cmd
}

// runSimHost serves the simulated host until ctx ends, printing to w how
// to reach it; cfg resolves --profile. ready, when not nil, is called
// with the host once its files are written (tests).
func runSimHost(ctx context.Context, w io.Writer, cfg *config.Config, f simHostFlags, ready func(*sim.Host)) error {
	if f.history < sim.MinHistory || f.history > sim.MaxHistory {
		return fmt.Errorf("--history %d: want %d to %d", f.history, sim.MinHistory, sim.MaxHistory)
	}
	if f.gpus < 1 || f.gpus > sim.MaxGPUs {
		return fmt.Errorf("--gpus %d: want 1 to %d", f.gpus, sim.MaxGPUs)
	}
	if _, err := cfg.ResolveProfile(f.profile); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	h, err := sim.Start(ctx, sim.Options{Dir: f.dir, GPUs: f.gpus, History: f.history, TimeScale: f.timeScale,
		StartupDelay: f.startupDelay, Seed: f.seed})
	if err != nil {
		return fmt.Errorf("start the simulated host: %w", err)
	}
	defer h.Close()
	site := siteOf(h, demoFlags{gpus: f.gpus, profile: f.profile})
	cfgPath, sshPath, err := writeSimHostFiles(site)
	if err != nil {
		return err
	}
	// A cockpit can join it as it joins a demo (demo --join --dir DIR).
	if err := site.write(); err != nil {
		return fmt.Errorf("write the join file: %w", err)
	}
	kh, err := os.ReadFile(h.KnownHostsPath)
	if err != nil {
		return err
	}
	c := h.Commits
	q := shellQuote
	run := func(args string) string {
		return fmt.Sprintf("flightdeck --config %s %s -F %s", q(cfgPath), args, q(sshPath))
	}
	fmt.Fprintf(w, "flightdeck: simulated host: %d GPUs, %d commits after the baseline (%d fail to launch), serving until Ctrl-C\n",
		f.gpus, f.history, len(c.Broken))
	fmt.Fprintf(w, "  ssh target   %s\n", h.Target())
	fmt.Fprintf(w, "  known_hosts  %s\n", strings.TrimSpace(string(kh)))
	fmt.Fprintf(w, "  identity     %s\n", h.IdentityPath)
	fmt.Fprintf(w, "  repository   %s (HEAD %s, the baseline; origin/main %s; %q at %s)\n", h.RepoPath, c.Baseline[:7], c.Latest[:7], sim.SubjectRegressing, c.Regressing[:7])
	fmt.Fprintf(w, "  config       %s (host %q), %s\n", cfgPath, simHostAlias, sshPath)
	fmt.Fprintln(w, "Try:")
	for _, a := range []string{"server status " + simHostAlias, "server launch " + simHostAlias, "git log " + simHostAlias, "connect " + simHostAlias,
		"bisect " + simHostAlias + " --good " + c.Baseline[:7] + " --bad origin/main --samples 3"} {
		fmt.Fprintln(w, "  "+run(a))
	}
	fmt.Fprintf(w, "  flightdeck demo --join --dir %s\n", q(h.Dir))
	if ready != nil {
		ready(h)
	}
	<-ctx.Done()
	fmt.Fprintln(w, "flightdeck: stopping the simulated host")
	return nil
}

// writeSimHostFiles writes the CLI's view of the site into its directory:
// flightdeck.toml with the [hosts.sim] table (the demo's target, logs,
// repository, preset, profile, model, TP and port) and an ssh_config that
// pins the throwaway identity and known_hosts (no agent, no ~/.ssh). It
// returns their paths.
func writeSimHostFiles(s demoSite) (cfgPath, sshPath string, err error) {
	hc := s.config()
	cfgPath = filepath.Join(s.Dir, simHostConfigFile)
	sshPath = filepath.Join(s.Dir, simHostSSHConfig)
	toml := fmt.Sprintf(`# Written by flightdeck sim host (pid %d): the simulated host, for
#   flightdeck --config %s COMMAND %s -F %s
[hosts.%s]
target  = %q
log_dir = %q
repo    = %q
workdir = %q
preset  = %q
profile = %q
model   = %q
tp      = %d
port    = %d
`, os.Getpid(), cfgPath, simHostAlias, sshPath, simHostAlias, hc.Target, hc.LogDir, hc.Repo, hc.Workdir, hc.Preset, hc.Profile, hc.Model, hc.TP, hc.Port)
	sshConf := fmt.Sprintf(`# Written by flightdeck sim host: the simulated host's throwaway keys.
Host 127.0.0.1
  IdentityFile %s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %s
`, sshQuote(s.Identity), sshQuote(s.KnownHosts))
	for _, f := range []struct{ path, body string }{{cfgPath, toml}, {sshPath, sshConf}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, []byte(f.body), 0o600); err != nil {
			return "", "", err
		}
		if err := os.Rename(tmp, f.path); err != nil {
			return "", "", err
		}
	}
	return cfgPath, sshPath, nil
}

// sshQuote quotes a path for ssh_config, which takes double quotes around
// an argument with spaces.
func sshQuote(p string) string {
	if strings.ContainsAny(p, " \t") {
		return `"` + p + `"`
	}
	return p
}
