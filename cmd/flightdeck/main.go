// Command flightdeck is a terminal cockpit for debugging the performance of
// LLM inference servers (SGLang, vLLM) on GPU hosts: live per-GPU panels from
// nvidia-smi, the server log with its tok/s, over SSH or locally.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"; the
// VCS revision from the build info is used otherwise.
var version = ""

func main() {
	// The simulated host re-executes this binary as its fake nvidia-smi and
	// fake inference server; those roles run here and exit.
	sim.RunRoleFromEnv()

	// SIGHUP too: a closed tmux pane or a dropped SSH session to the box
	// must still stop the probes and remove the demo's simulated host.
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	var caught atomic.Value
	go func() {
		if sig, ok := <-sigs; ok {
			caught.Store(sig)
			cancel()
		}
	}()
	err := newRootCmd().ExecuteContext(ctx)
	signal.Stop(sigs)
	cancel()
	if sig, ok := caught.Load().(syscall.Signal); ok {
		// The shell convention for a command ended by a signal.
		os.Exit(128 + int(sig))
	}
	if err != nil {
		var ec exitCode
		if !errors.As(err, &ec) {
			fmt.Fprintln(os.Stderr, "flightdeck:", err)
			ec = 1
		}
		os.Exit(int(ec))
	}
}

// exitCode ends the program with a status after the command has already
// reported why on stderr.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "flightdeck",
		Short: "A terminal cockpit for debugging LLM inference servers on GPU hosts",
		Long: `flightdeck watches a GPU host running an inference server (SGLang, vLLM): live
per-GPU panels (util, memory, power, temperature, SM/memory clocks, P-state,
PCIe gen/width, throttle reasons), the server log and its tok/s, over SSH or
locally.

Every session is recorded in a journal: flightdeck journal ls, flightdeck
replay FILE, flightdeck journal export FILE --format md.

Try it without a GPU:  flightdeck demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// An unknown command is a usage error (exit 2), as in the groups.
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
		// --version prints what `flightdeck version` prints.
		Version: versionString(),
	}
	root.SetVersionTemplate("flightdeck {{.Version}}\n")
	root.PersistentFlags().StringVar(&configPath, "config", "", "configuration file (default $XDG_CONFIG_HOME/flightdeck/config.toml)")
	root.AddCommand(newConnectCmd(), newDemoCmd(), newReplayCmd(), newJournalCmd(), newServerCmd(), newGitCmd(), newConfigCmd(), newSimCmd(), newParseCmd(), newVersionCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newFollowCmd())
	root.AddCommand(newAgentCmd())
	root.AddCommand(newExperimentCmd())
	root.AddCommand(newBisectCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the flightdeck version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "flightdeck", versionString())
			return err
		},
	}
}

// versionString is this build's version: main.version when set at build
// time, else formatVersion of the build info: "v0.0.0-20261130082657-
// 3b2fc0c519e0 go1.26.8", "devel 3b2fc0c519e0+dirty go1.26.8", or
// "(unknown)" without build info.
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return formatVersion(bi.Main.Version, rev, dirty, bi.GoVersion)
}

// formatVersion is "MODVERSION [REV[+dirty]] GOVERSION" from the main
// module's version (debug.BuildInfo.Main.Version: "(devel)", a tag, or
// since Go 1.24 a VCS pseudo-version such as
// "v0.0.0-20261130082657-3b2fc0c519e0", with "+dirty" for a modified
// tree), the vcs.revision (40 hex digits, cut to 12), whether
// vcs.modified was true, and the Go version. The revision is left out
// when the module version already ends with it (a pseudo-version names
// its commit), and "+dirty" is written once.
func formatVersion(modVersion, rev string, dirty bool, goVersion string) string {
	v := modVersion
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	base, meta, _ := strings.Cut(v, "+") // semver build metadata: "+dirty"
	if rev != "" && !strings.HasSuffix(base, "-"+rev) {
		v = base + " " + rev
		if meta != "" || dirty {
			v += "+dirty"
		}
	} else if dirty && meta == "" {
		v += "+dirty"
	}
	return v + " " + goVersion
}

// runGroup is the RunE of a command that only groups subcommands (and of
// the root): alone it prints its help; with an unknown subcommand it fails
// with a usage error (exit status 2, as a bad flag), rather than printing
// help and exiting 0 as cobra does for a group.
func runGroup(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(cmd, fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()))
	}
	return cmd.Help()
}
