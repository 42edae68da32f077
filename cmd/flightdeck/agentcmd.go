package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/gpu/agent"
	"github.com/flightdeck-dev/flightdeck/probes/gpu/nvml"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// agentSampler is what `flightdeck agent` needs of an NVML sampler
// (*nvml.Sampler; tests give a fake).
type agentSampler interface {
	Info() nvml.Info
	Sample() (event.GPUSample, error)
	Run(ctx context.Context, sink event.Sink) error
	Close() error
}

// openNVML opens the sampler (agent.OpenNVML: the simulated host's fake
// NVML where it runs, else libnvidia-ml.so.1). Tests replace it.
var openNVML = func(opts nvml.Options) (agentSampler, bool, error) {
	s, simulated, err := agent.OpenNVML(opts)
	if err != nil {
		return nil, simulated, err
	}
	return s, simulated, nil
}

// agentFlags are `flightdeck agent`'s options.
type agentFlags struct {
	interval   time.Duration
	pcie       bool
	noApps     bool
	once       bool
	watchStdin bool
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Sample the GPUs of this host through NVML and stream JSON Lines (run by the cockpit over SSH)",
		Long: `agent samples this host's GPUs in-process through NVML (libnvidia-ml.so.1) and
writes JSON Lines on stdout: a hello line, then one sample line per interval,
and Xid events as they happen. The cockpit uploads its own binary to a GPU host
and runs "flightdeck agent" over one SSH session, so no process is spawned per
sample. The protocol is described in docs/agent-protocol.md.

When NVML cannot be used (no driver, a build without cgo) agent writes one
{"t":"unavailable",...} line saying why and exits with status 3.

While a read is blocked in NVML it writes a stale line every interval after
the second, and a {"t":"alive"} line whenever it wrote nothing for an interval
and a half, so the cockpit can tell a blocked driver from a dead agent.

agent stops at SIGTERM, SIGINT or SIGHUP, when its stdout is closed (the SSH
session ended: its next write, at most an interval and a half later, fails),
and with --watch-stdin when stdin reaches its end.`,
		Example: `  flightdeck agent --once | head -c 400
  ssh gpu-box flightdeck agent --interval 500ms --watch-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "interval", time.Second, "time between samples (at least 10ms)")
	fl.BoolVar(&f.pcie, "pcie", false, "also read PCIe rx/tx throughput (blocks about 20 ms per GPU per direction)")
	fl.BoolVar(&f.noApps, "no-apps", false, "do not read per-process GPU memory")
	fl.BoolVar(&f.once, "once", false, "print the hello line and one sample, then exit")
	fl.BoolVar(&f.watchStdin, "watch-stdin", false, "exit when stdin reaches its end (for callers that hold it open)")
	for _, sub := range agentSubcommands {
		cmd.AddCommand(sub())
	}
	return cmd
}

// agentSubcommands are the constructors of `flightdeck agent`'s
// subcommands: the host-side watchers the cockpit runs through
// remote.Agent (issue 20). Each registers itself from an init function
// in its own file, so that adding one touches no other.
var agentSubcommands []func() *cobra.Command

// runAgent runs the agent until ctx ends, the output breaks or (with
// watchStdin) stdin ends. An unavailable NVML returns exitCode(3) after
// the unavailable line.
func runAgent(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, f agentFlags) error {
	if f.interval < 10*time.Millisecond {
		return fmt.Errorf("--interval %v: must be at least 10ms", f.interval)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	w := bufio.NewWriterSize(stdout, 64<<10)
	opts := nvml.Options{Interval: f.interval, PCIe: f.pcie, NoApps: f.noApps}
	s, simulated, err := openNVML(opts)
	if err != nil {
		u := agent.Unavailable{V: agent.ProtocolVersion, Reason: err.Error()}
		if ue, ok := errors.AsType[*nvml.UnavailableError](err); ok {
			u.Reason, u.Code = ue.Reason, ue.Code
		}
		if werr := writeFlush(w, agent.AppendUnavailable(nil, u)); werr != nil {
			return werr
		}
		fmt.Fprintln(stderr, "flightdeck agent:", err)
		return exitCode(agent.ExitUnavailable)
	}
	defer s.Close()
	info := s.Info()
	hello := agent.Hello{V: agent.ProtocolVersion, Version: versionString(), Driver: info.Driver,
		NVML: info.NVML, CUDA: info.CUDA, GPUs: info.GPUs, Interval: f.interval, Simulated: simulated}
	if err := writeFlush(w, agent.AppendHello(nil, hello)); err != nil {
		return err
	}
	if f.once {
		smp, err := s.Sample()
		if err != nil {
			return fmt.Errorf("agent: sample: %w", err)
		}
		return writeFlush(w, agent.AppendSample(nil, smp))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	var (
		mu        sync.Mutex
		buf       []byte
		werr      error
		lastWrite = time.Now() // the hello
	)
	// write writes one line (under mu); a failed write stops sampling.
	write := func(line []byte) {
		if werr = writeFlush(w, line); werr != nil {
			cancel() // the reader is gone: stop sampling
		}
		lastWrite = time.Now()
	}
	sink := func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		if werr != nil {
			return
		}
		var ok bool
		if buf, ok = agent.AppendEvent(buf[:0], e); !ok {
			return // a payload the protocol does not carry (event.GPUSource)
		}
		write(buf)
	}
	// The heartbeat: a goroutine that never calls NVML writes an alive
	// line when nothing was written for 1.5 intervals (a read blocked in
	// the driver before its stale report, which comes after 2), so the
	// cockpit hears from a live agent at least every 2 intervals, and the
	// agent's next write after the session closed fails (SIGPIPE or
	// EPIPE) and ends it: OpenSSH does not kill a command whose session
	// closed, nor, for root, one it is asked to signal.
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		heartbeat(ctx, f.interval, func(now time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if werr != nil || now.Sub(lastWrite) < f.interval*3/2 {
				return
			}
			buf = agent.AppendAlive(buf[:0], now)
			write(buf)
		})
	}()
	rerr := s.Run(ctx, sink)
	stopped := ctx.Err() != nil // asked to stop (stdin closed, a signal), before cancel says so
	cancel()
	<-hbDone
	mu.Lock()
	defer mu.Unlock()
	if werr != nil {
		return fmt.Errorf("agent: writing the stream: %w", werr)
	}
	if rerr != nil && !stopped {
		return fmt.Errorf("agent: %w", rerr)
	}
	return nil
}

// heartbeat calls beat every half interval until ctx ends.
func heartbeat(ctx context.Context, interval time.Duration, beat func(now time.Time)) {
	t := time.NewTicker(max(interval/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			beat(now)
		}
	}
}

func writeFlush(w *bufio.Writer, line []byte) error {
	if _, err := w.Write(line); err != nil {
		return err
	}
	return w.Flush()
}
