package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/driver"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/hostdiff"
)

// The status verb: flightdeck server status, how the server was found, its
// health and launch, and its JSON.

// statusJSON is `server status --json`.
type statusJSON struct {
	Running    bool              `json:"running"`
	How        string            `json:"found_by,omitempty"`
	PID        int               `json:"pid,omitempty"`
	Healthy    bool              `json:"healthy"`
	Health     string            `json:"health_endpoint,omitempty"`
	Preset     string            `json:"preset,omitempty"`
	Profile    string            `json:"profile,omitempty"`
	Server     string            `json:"server,omitempty"`
	Port       int               `json:"port,omitempty"`
	Log        string            `json:"log,omitempty"`
	Argv       []string          `json:"argv,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	LaunchedAt *time.Time        `json:"launched_at,omitempty"`
	Exit       *int              `json:"exit_status,omitempty"`
	Processes  []event.Process   `json:"processes,omitempty"`
	// Candidates: several processes claim the port; none was adopted.
	Candidates []event.Process `json:"candidates,omitempty"`
	// Driver is the cockpit holding the host's driver lock, when one does.
	Driver *event.DriverInfo `json:"driver,omitempty"`
	// Since is what changed on the host since the last session recorded
	// for it (Session.SinceLast); absent with --no-since.
	Since *event.HostChanges `json:"since,omitempty"`
}

func newServerStatusCmd() *cobra.Command {
	var f serverFlags
	var asJSON, noSince bool
	cmd := &cobra.Command{
		Use:   "status HOST",
		Short: "Show the server on HOST: found how, pid, health, launch (exit 3 when none runs)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ss, found, done, err := f.openFound(ctx, args[0])
			if err != nil {
				return err
			}
			defer done()
			c := ss.Control()
			st := statusJSON{Running: found.Running, How: found.How, PID: found.ServerPID, Processes: found.Tree}
			port := 0
			if r := found.Record; r != nil {
				l := r.Launch
				st.Preset, st.Profile, st.Server, st.Port, st.Log, st.Argv, st.Env = l.Preset, l.Profile, l.Server, l.Port, l.LogPath, l.Argv, l.Env
				at := l.At
				st.LaunchedAt = &at
				port = l.Port
				if found.Exit >= 0 {
					code := found.Exit
					st.Exit = &code
				}
			}
			if found.Running && found.How != server.ByPidfile {
				// Adopted: the pidfile, if any, is an older launch's.
				st.Preset, st.Profile, st.Server, st.Log, st.Argv, st.Env, st.LaunchedAt, st.Exit = "", "", "", "", nil, nil, nil, nil
				port = c.DefaultPort()
				if p := found.Port; p > 0 {
					port = p
				}
				st.Port = port
			}
			if !found.Running && len(found.Others) > 0 {
				st.Port, st.Candidates = c.DefaultPort(), found.Others
			}
			if found.Running && port > 0 {
				if d, ok := c.Host.(remote.Dialer); ok {
					hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					st.Health, err = server.Health(hctx, d, port)
					cancel()
					st.Healthy = err == nil
				}
			}
			if info, held, err := driver.Read(ctx, c.Host, c.Target.LogDir); err == nil && held {
				st.Driver = &info
			}
			if !noSince {
				// What a cockpit's banner says on connect: the host
				// against the last session recorded for it.
				if _, hc, err := ss.SinceLast(ctx, sessions.SinceOptions{}); err == nil {
					st.Since = &hc
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "flightdeck: what changed since the last session: %s\n", sanitize.String(err.Error()))
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(st); err != nil {
					return err
				}
			} else {
				printStatus(out, st, found)
			}
			if !found.Running {
				return exitCode(exitNoServer)
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noSince, "no-since", false, "do not compare the host with the last session recorded for it (skips the version probes)")
	return cmd
}

func printStatus(w io.Writer, st statusJSON, f event.ServerFound) {
	s := sanitize.String
	switch {
	case st.Running:
		fmt.Fprintf(w, "running: %s pid %d (found by %s)", s(orDash(st.Server)), st.PID, st.How)
		if st.Healthy {
			fmt.Fprintf(w, ", healthy (%s)", st.Health)
		} else {
			fmt.Fprint(w, ", not answering HTTP health checks")
		}
		fmt.Fprintln(w)
	case st.Exit != nil:
		fmt.Fprintf(w, "not running: the last launch exited with status %d\n", *st.Exit)
	case len(f.Others) > 0:
		fmt.Fprintf(w, "not adopted: %d processes listen on or claim port %d (pids%s); stop the wrong ones by hand\n", len(f.Others), st.Port, pidList(f.Others))
	default:
		fmt.Fprintln(w, "not running")
	}
	if f.PidfileErr != nil {
		fmt.Fprintln(w, "pidfile unreadable:", s(f.PidfileErr.Error()))
	}
	if st.LaunchedAt != nil {
		fmt.Fprintf(w, "launch:  %s, preset %s, profile %s, port %d\n", st.LaunchedAt.Format(time.DateTime), s(orDash(st.Preset)), s(orDash(st.Profile)), st.Port)
		if len(st.Env) > 0 {
			fmt.Fprintln(w, "env:    ", s(server.EnvLine(st.Env)))
		}
		fmt.Fprintln(w, "command:", s(server.CommandLine(event.LaunchInfo{Argv: st.Argv})))
		fmt.Fprintln(w, "log:    ", s(st.Log))
	}
	for _, p := range st.Processes {
		fmt.Fprintf(w, "  pid %d ppid %d pgid %d sid %d %s %s\n", p.PID, p.PPID, p.PGID, p.SID, p.State, s(p.Comm))
	}
	if d := st.Driver; d != nil {
		fmt.Fprintf(w, "driver:  %s pid %d, since %s, last heartbeat %s (host clock)\n", s(d.Who()), d.PID,
			d.Since.Local().Format(time.DateTime), d.Heartbeat.Local().Format(time.TimeOnly))
	}
	if st.Since != nil {
		for _, l := range hostdiff.Lines(*st.Since, time.Now()) {
			fmt.Fprintln(w, s(l))
		}
	}
}
