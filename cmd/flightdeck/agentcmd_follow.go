package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/follow"
)

func init() { agentSubcommands = append(agentSubcommands, newAgentFollowCmd) }

// newAgentFollowCmd is `flightdeck agent follow`: the host side of the
// log Follower's agent path (follow.StreamFile).
func newAgentFollowCmd() *cobra.Command {
	var (
		o      follow.StreamOptions
		marker string
		anchor string
	)
	cmd := &cobra.Command{
		Use:   "follow --marker MARKER [--offset N] [--anchor HEX] -- PATH",
		Short: "Follow a log file in-process and stream it as tail -F would (run by the cockpit over SSH)",
		Long: `follow reads PATH in this process (stat, fstat and pread every --poll; no
child process) and writes on stdout what the cockpit's log Follower reads from
"tail -c +N -F PATH 2>&1": the file's bytes from --offset, and messages worded
as GNU tail's, each starting with --marker, when the file is truncated,
rewritten (its bytes before the read offset changed), replaced (rotation),
missing, not a regular file, or appears. A keepalive message comes after
--keepalive without output, so it ends (EPIPE) soon after the SSH session
closes. The stream is described in docs/agent-protocol.md.`,
		Example: `  flightdeck agent follow --marker //././/./////././/./. -- /var/log/sglang.log`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			a, err := hex.DecodeString(anchor)
			if err != nil {
				return fmt.Errorf("--anchor: %w", err)
			}
			o.Path, o.Marker, o.Anchor = args[0], []byte(marker), a
			return follow.StreamFile(ctx, cmd.OutOrStdout(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&marker, "marker", "", "what starts every message (the Follower's nonce: '/' and '.', at least 16 bytes)")
	fl.Int64Var(&o.Offset, "offset", 0, "byte offset to start at (the start of a line)")
	fl.StringVar(&anchor, "anchor", "", "hex of the reader's bytes just before --offset (at most 128): other bytes there mean a rewrite")
	fl.DurationVar(&o.Poll, "poll", 150*time.Millisecond, "time between two looks at the file")
	fl.DurationVar(&o.Keepalive, "keepalive", 2*time.Second, "write a keepalive message after this long without output")
	return cmd
}
