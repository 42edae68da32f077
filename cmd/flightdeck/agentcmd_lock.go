package main

import (
	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/driver"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentLockCmd) }

// newAgentLockCmd is `flightdeck agent lock`: the driver lock's heartbeat
// (or a watcher's read of the lock) in-process on the host, one JSON line
// per operation (driver.ServeLock).
func newAgentLockCmd() *cobra.Command {
	var (
		o   driver.LockAgentOptions
		put string
	)
	cmd := &cobra.Command{
		Use:   "lock --file PATH [--put JSON --want VERSION] < PINGS",
		Short: "Keep or watch the driver lock in-process and stream JSON Lines (run by the cockpit over SSH)",
		Long: `agent lock operates on the driver lock file (flightdeck-driver.json) once at
start and once for each line read on stdin (the cockpit writes one per
heartbeat, so a frozen cockpit's lock goes stale), with the compare-and-swap
of the cockpit's lock script done in-process under the same mutex: no process
is spawned per heartbeat. With --put it rewrites the file with that content
while its version is still --want (driving), and ends after the first put
that finds the file changed; otherwise it reads the file (watching). Each
operation writes one line {"t":"lock",...} (docs/agent-protocol.md). It stops
at the end of stdin, at SIGTERM, SIGINT or SIGHUP, or when its stdout is
closed (the next write fails).`,
		Example: `  yes '' | head -n 2 | flightdeck agent lock --file ~/.flightdeck/logs/flightdeck-driver.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("put") {
				o.Drive, o.Content = true, []byte(put)
			}
			// main cancels the context at SIGTERM, SIGINT and SIGHUP.
			return driver.ServeLock(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.File, "file", "", "the lock file's absolute path")
	fl.StringVar(&o.Mutex, "mutex", "flock", "the mutex the lock script takes: flock (flock(2) and the mkdir mutex) or mkdir")
	fl.StringVar(&put, "put", "", "drive: the lock file's JSON to keep writing")
	fl.StringVar(&o.Want, "want", "", "drive: the version of the file it replaces (\"absent\" or \"MTIME CRC SIZE\")")
	return cmd
}
