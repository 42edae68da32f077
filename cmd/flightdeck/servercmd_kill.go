package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// The kill verb: flightdeck server kill, and the kill's steps as it prints
// them (a relaunch prints them too).

func newServerKillCmd() *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "kill HOST",
		Short: "Kill the server's whole process tree and wait for its GPU memory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			if err := ss.MayAct(ctx); err != nil {
				return err
			}
			if !found.Running && len(found.Others) > 0 {
				return fmt.Errorf("%d processes on %s serve or claim port %d (pids%s): not guessing which to kill", len(found.Others), c.Host.Name(), c.DefaultPort(), pidList(found.Others))
			}
			if !found.Running {
				fmt.Fprintln(cmd.ErrOrStderr(), "no server running on", c.Host.Name())
				return exitCode(exitNoServer)
			}
			if !f.yes {
				if err := confirm(ctx, fmt.Sprintf("Kill pid %d on %s (%s; SIGTERM, SIGKILL after %v)?", found.ServerPID, c.Host.Name(), foundHow(found), f.grace)); err != nil {
					return err
				}
			}
			ss.OnEvent(printKillSteps(cmd.ErrOrStderr()))
			if err := ss.Kill(ctx); err != nil {
				if errors.Is(err, server.ErrNoServer) {
					return exitCode(exitNoServer)
				}
				return err
			}
			return nil
		},
	}
	f.add(cmd)
	f.addKill(cmd)
	return cmd
}

func printKillSteps(w io.Writer) event.Sink {
	return func(e event.Event) {
		if k, ok := e.Data.(event.KillStep); ok {
			switch {
			case k.Err != nil:
				fmt.Fprintf(w, "kill: %s: %s\n", k.Step, sanitize.String(k.Err.Error()))
			case k.Detail != "":
				fmt.Fprintf(w, "kill: %s: %s\n", k.Step, sanitize.String(k.Detail))
			default:
				fmt.Fprintf(w, "kill: %s\n", k.Step)
			}
		}
	}
}
