package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui"
)

// connectFlags are the options of `flightdeck connect`.
type connectFlags struct {
	ssh       sshFlags
	log       string
	repo      string
	interval  time.Duration
	nvidiaSMI string
	gpu       gpuFlags
	server    string
	color     colorFlags
	journal   journalFlags
	lock      lockFlags
}

// sshFlags are the SSH options of every command that reaches a host.
type sshFlags struct {
	acceptNew  bool
	sshConfig  string
	identities []string
	knownHosts []string
	user       string
	port       int
}

// addSSHFlags registers f's flags; the SSH port is -p/--port for connect
// (like ssh -p) and --ssh-port where --port is the server's HTTP port.
func addSSHFlags(fl *pflag.FlagSet, f *sshFlags, serverPort bool) {
	fl.BoolVar(&f.acceptNew, "accept-new-host-key", false, "record the key of a host not yet in known_hosts (never a changed key)")
	fl.StringVarP(&f.sshConfig, "ssh-config", "F", "", "ssh config file to read instead of ~/.ssh/config")
	fl.StringArrayVarP(&f.identities, "identity", "i", nil, "identity file (repeatable; replaces IdentityFile from the config)")
	fl.StringArrayVar(&f.knownHosts, "known-hosts", nil, "known_hosts file (repeatable; replaces the configured ones)")
	fl.StringVarP(&f.user, "user", "l", "", "user to log in as, unless the target names one")
	if serverPort {
		fl.IntVar(&f.port, "ssh-port", 0, "SSH port, unless the target names one")
	} else {
		fl.IntVarP(&f.port, "port", "p", 0, "SSH port, unless the target names one")
	}
}

func newConnectCmd() *cobra.Command {
	var f connectFlags
	cmd := &cobra.Command{
		Use:   "connect HOST",
		Short: "Open the cockpit on a GPU host over SSH (or \"local\" on this machine)",
		Long: `connect opens the cockpit on HOST: an SSH target (user@host[:port]) or an alias
from ~/.ssh/config (HostName, User, Port, IdentityFile and ProxyJump are
honoured; ssh-agent and identity files authenticate; known_hosts is checked
strictly), or "local" to watch this machine without SSH (e.g. inside tmux on
the GPU host).

An unknown host key is refused with its SHA256 fingerprint: check it, then
pass --accept-new-host-key to record it (like StrictHostKeyChecking=
accept-new). A changed host key is always refused.

HOST may also name a [hosts.NAME] table of the configuration (flightdeck
config init): its target, log directory, repository and launch defaults.
Without --log the cockpit follows the log of the server flightdeck last
launched on the host (its pidfile), and each new launch's log.

Keys K (kill) and L (launch/relaunch with a preset and env profile) drive
the server; quitting the cockpit never stops it.

The session is recorded in a journal (every launch an experiment with its
fingerprint and tok/s; e and n for experiments and notes), by default a new
file under $XDG_STATE_HOME/flightdeck/journals/<host>/; its path is printed
at exit. See flightdeck journal --help and flightdeck replay --help.`,
		Example: `  flightdeck connect gpu-box --log /data/logs/sglang.log
  flightdeck connect root@10.1.230.174:22 --log /data/logs/sglang.log --repo /root/sglang
  flightdeck connect local --log ./server.log --interval 500ms
  flightdeck connect gpu-box --name eagle-bisect`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New(`connect needs one HOST: user@host[:port], an alias from ~/.ssh/config, or "local"`)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConnect(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.log, "log", "", "server log file on the host to follow")
	fl.StringVar(&f.repo, "repo", "", "the server's git checkout on the host: HEAD in the header, the git panel (g)")
	fl.DurationVar(&f.interval, "interval", time.Second, "GPU sampling interval")
	addSSHFlags(fl, &f.ssh, false)
	fl.StringVar(&f.nvidiaSMI, "nvidia-smi", "nvidia-smi", "nvidia-smi command on the host")
	f.gpu.add(fl)
	fl.StringVar(&f.server, "server", "", `server writing the log: "sglang" or "vllm" (default: inferred)`)
	addColorFlags(fl, &f.color)
	addJournalFlags(fl, &f.journal)
	addLockFlags(fl, &f.lock)
	return cmd
}

func runConnect(ctx context.Context, target string, f connectFlags) error {
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %v is too short (at least 10ms)", f.interval)
	}
	if err := f.gpu.check(); err != nil {
		return err
	}
	switch f.server {
	case "", "sglang", "vllm":
	default:
		return fmt.Errorf(`--server %q: want "sglang" or "vllm"`, f.server)
	}
	if err := f.journal.check(); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	// HOST may name a [hosts.NAME] table of the config: its SSH target,
	// log directory, repository and launch defaults.
	hc := cfg.Host(target)
	if f.repo == "" {
		f.repo = hc.Repo
	}
	host, err := openHost(ctx, hc.Target, f.ssh)
	if err != nil {
		return err
	}
	defer host.Close()
	// After the dial, so that host-key and authentication errors come first.
	if err := needTerminal(); err != nil {
		return err
	}
	lc := sessions.LiveConfig{LogPath: f.log, Interval: f.interval, Server: f.server, GPUProgram: f.nvidiaSMI}
	if err := f.gpu.apply(&lc); err != nil {
		return err
	}
	// The journal is opened last before the screen: a refused one (another
	// cockpit writes it) is said plainly, and a failed dial leaves no file.
	s, err := sessions.Open(sessions.Options{Name: target, Config: cfg, Journal: f.journal.options(), Version: versionString(),
		Header: event.SessionHeader{Host: host.Name(), LogPath: f.log, NoLog: f.log == ""}, Driver: f.lock.driving()})
	if err != nil {
		return err
	}
	// One cockpit drives the host: the lock sits next to the server's
	// pidfile. A second cockpit opens read-only and says who drives.
	_, onHost := host.(*remote.Local)
	if err := s.Attach(ctx, sessions.AttachOptions{Host: host, Target: hc, Repo: f.repo, OnHost: onHost, GPUProgram: f.nvidiaSMI}); err != nil {
		s.Abandon()
		return err
	}
	opts := cockpitOptions(tui.Options{Host: host.Name(), LogPath: f.log, NoLog: f.log == "", Color: f.color.Mode()}, s, f.repo != "")
	err = runCockpit(ctx, s, opts, func(ctx context.Context) error {
		// What changed since the last session here: in the background,
		// once the probes run (the state takes the first GPU sample).
		return s.Run(ctx, lc, func() { s.RecordSinceLast(ctx, sessions.SinceOptions{}) })
	})
	// A git action the screen was quit under finishes before the
	// connection closes (it would be cut off in the middle).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	s.WaitGit(wctx, func() { fmt.Fprintln(os.Stderr, "flightdeck: waiting for the git action in flight to finish ...") })
	return err
}

// openHost returns the local host for "local", else dials target over SSH.
// The first dial happens before the screen opens so that host-key and
// authentication errors are printed plainly; later drops reconnect inside
// the cockpit.
func openHost(ctx context.Context, target string, f sshFlags) (remote.Host, error) {
	if target == "local" {
		return remote.NewLocal(), nil
	}
	opts := remote.SSHOptions{
		ConfigFile:       f.sshConfig,
		IdentityFiles:    f.identities,
		KnownHostsFiles:  f.knownHosts,
		AcceptNewHostKey: f.acceptNew,
		User:             f.user,
		Port:             f.port,
	}
	if term.IsTerminal(os.Stdin.Fd()) {
		opts.Passphrase = promptPassphrase
	}
	fmt.Fprintf(os.Stderr, "flightdeck: connecting to %s ...\n", target)
	h, err := remote.DialSSH(ctx, target, opts)
	if err != nil {
		// The remote errors say what to do next (--accept-new-host-key,
		// ssh-add) themselves.
		return nil, fmt.Errorf("connect %s: %w", target, err)
	}
	return h, nil
}

// needTerminal reports early, in plain words, that the cockpit cannot
// run without a terminal (bubbletea would fail opening /dev/tty).
func needTerminal() error {
	if !term.IsTerminal(os.Stdout.Fd()) {
		return errors.New("the cockpit needs a terminal: run it in a terminal or tmux (for scripts, see flightdeck parse)")
	}
	if !term.IsTerminal(os.Stdin.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return fmt.Errorf("the cockpit needs a terminal for keys: %w", err)
		}
		tty.Close()
	}
	return nil
}

// screenOpen is set while the cockpit owns the terminal: a passphrase
// asked for then (a reconnect needing a key not asked for before) cannot be
// typed, so it is refused with a way out instead.
var screenOpen atomic.Bool

func promptPassphrase(file string) ([]byte, error) {
	if screenOpen.Load() {
		return nil, fmt.Errorf("key %s needs a passphrase while the cockpit is open: add it to ssh-agent (ssh-add %s)", file, file)
	}
	fmt.Fprintf(os.Stderr, "Enter passphrase for key %s: ", file)
	defer fmt.Fprintln(os.Stderr)
	return term.ReadPassword(os.Stdin.Fd())
}
