package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The logs verb: flightdeck server logs, the current server's log,
// sanitised; with -f it follows on to the next launch's.

func newServerLogsCmd() *cobra.Command {
	var f serverFlags
	var follow bool
	var lines int
	cmd := &cobra.Command{
		Use:   "logs HOST",
		Short: "Print the current server's log (from its pidfile), sanitised; -f follows it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if lines < 0 {
				return fmt.Errorf("-n %d: want 0 or more lines", lines)
			}
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			if found.Record == nil {
				return fmt.Errorf("no launch recorded on %s (no pidfile in %s): flightdeck only knows the logs of servers it launched", c.Host.Name(), c.Target.LogDir)
			}
			path := found.Record.Launch.LogPath
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			tailCmd, err := remote.Command("tail", "-n", strconv.Itoa(lines), "--", path)
			if err != nil {
				return err
			}
			if !follow {
				res, err := c.Host.Run(ctx, tailCmd, nil)
				if err != nil {
					return fmt.Errorf("read %s: %w", path, err)
				}
				for _, l := range strings.SplitAfter(string(res.Stdout), "\n") {
					if l != "" {
						out.WriteString(sanitize.String(strings.TrimSuffix(l, "\n")) + "\n")
					}
				}
				return nil
			}
			// The same following as the cockpit's: from the pidfile's log,
			// on to the next launch's when the server is relaunched.
			var mu sync.Mutex
			sink := func(e event.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch p := e.Data.(type) {
				case event.LogLines:
					for _, l := range p.Lines {
						out.WriteString(sanitize.Line(l.Text) + "\n")
					}
				case event.LogReset:
					fmt.Fprintf(out, "--- %s: %s ---\n", sanitize.String(p.Words()), sanitize.String(p.Path))
				case nil,
					event.Baseline, event.BenchDone, event.BenchProgress, event.BenchStarted,
					event.ConnState, event.DriverState, event.HostChanges, event.HostState, event.ExperimentEnd,
					event.ExperimentFingerprint, event.ExperimentStart, event.ExperimentUpdate,
					event.GPUFailure, event.GPUSample, event.GPUSource, event.GPUStale,
					event.GitAction, event.GitMoved, event.GitStatus, event.JournalStatus, event.Key,
					event.KillStep, event.LogBench, event.LogFollowError, event.LogNotice,
					event.Note, event.Prefill, event.Repeat, event.History, event.BisectEnd, event.BisectLaunch, event.BisectProgress, event.BisectStart, event.RepeatProgress, event.RepoHead,
					event.RepoUnreadable, event.ServerFailure, event.ServerHealthy,
					event.ServerLaunched, event.ServerObserved, event.ServerReady,
					event.ServerStatus, event.Session, event.SpecDecode, event.Throughput,
					event.TokRate, event.Xid, event.EngineEndpoint, event.EngineSample, event.KernelLog, event.NCCL, event.Topology:
					return
				}
				out.Flush()
			}
			live := sessions.NewLive(sessions.LiveConfig{Host: c.Host, Control: c, NoGPU: true,
				LogPath: "", LogBacklog: max(int64(lines)*200, 1)}, sink)
			err = live.Run(ctx)
			if errors.Is(err, context.Canceled) || ctx.Err() != nil {
				return nil
			}
			return err
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	cmd.Flags().IntVarP(&lines, "lines", "n", 50, "lines of the end of the log to print")
	return cmd
}
