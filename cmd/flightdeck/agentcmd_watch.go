package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/hostwatch"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentWatchCmd) }

// agentWatchFlags are `flightdeck agent watch`'s options.
type agentWatchFlags struct {
	repo, pidfile, exitFile, match string
	port, maxDirs                  int
	interval, keepalive            time.Duration
}

// options turns the flags into hostwatch.Options.
func (f agentWatchFlags) options() hostwatch.Options {
	o := hostwatch.Options{Repo: f.repo, Interval: f.interval, Keepalive: f.keepalive, MaxDirs: f.maxDirs}
	if f.pidfile != "" {
		o.Server = &hostwatch.ServerSpec{Pidfile: f.pidfile, ExitFile: f.exitFile, Port: f.port, Match: f.match}
	}
	return o
}

func newAgentWatchCmd() *cobra.Command {
	var f agentWatchFlags
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Tell the cockpit when the server's checkout or the server itself may have changed (JSON Lines; spawns nothing)",
		Long: `watch fingerprints, every interval and in this process (stats, small reads,
inotify: no process is spawned), the git checkout given with --repo (HEAD, its
ref, packed-refs, the index's stat, the working tree's changes outside .git that
.gitignore does not ignore) and the server given with --pidfile (the pidfile and
exit file, the pidfile's process and its children, the sockets listening on
--port, the processes whose command line matches --match), and writes one JSON
line when a fingerprint changes: {"t":"git"} or {"t":"server"}, after a
{"t":"watch"} line and one of each at start. The cockpit then reads the checkout
or looks for the server. A {"t":"alive"} line comes after --keepalive of
silence, so a closed SSH session ends the watcher at that write. The protocol is
described in docs/agent-protocol.md ("agent watch").`,
		Example: `  flightdeck agent watch --repo ~/sglang --interval 1s
  flightdeck agent watch --pidfile ~/.flightdeck/logs/flightdeck-server.json --port 30000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return hostwatch.Run(cmd.Context(), cmd.OutOrStdout(), f.options())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "the git checkout to watch (any directory in it)")
	fl.StringVar(&f.pidfile, "pidfile", "", "the server's pidfile (flightdeck-server.json in the log directory); watches the server")
	fl.StringVar(&f.exitFile, "exit-file", "", "the launch wrapper's exit file (flightdeck-server.exit)")
	fl.IntVar(&f.port, "port", 0, "the server's TCP port (0: no listener check)")
	fl.StringVar(&f.match, "match", "", "extended regular expression of a server's NUL-separated command line (\"\": none)")
	fl.DurationVar(&f.interval, "interval", hostwatch.DefaultInterval, "time between fingerprints (at least 10ms)")
	fl.DurationVar(&f.keepalive, "keepalive", hostwatch.DefaultKeepalive, "an alive line after this much silence")
	fl.IntVar(&f.maxDirs, "max-dirs", hostwatch.DefaultMaxDirs, "most working-tree directories watched (inotify watches)")
	return cmd
}
