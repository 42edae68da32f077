package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/remote/sim"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		RunE:  runGroup,
		Short: "Parts of the simulated GPU host, to run on their own",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "server [SGLANG FLAGS]",
		Short: "Run the simulated SGLang server (log on stdout, HTTP API on --port)",
		Long: `sim server runs the simulated inference server that flightdeck demo uses:
it writes SGLang-format logs (start-up, the ready line, Decode batch lines
with gen throughput) to stdout and serves /health, /v1/models and
OpenAI-style completions on --host/--port. Its speed follows the reference
numbers: 62.5 tok/s, 89 with the NCCL profile in its environment.

It accepts SGLang's launch flags (--model-path, --tp-size, --dp-size, --port,
--host, --speculative-algorithm EAGLE3, …; others are accepted and ignored)
and these of its own:
  --sim-dir DIR            a simulated host's directory (GPU state for its
                           nvidia-smi, its repo for the regression)
  --repo DIR               the checkout whose HEAD sets the speed (x0.92 at the
                           regressing commit) and whether it starts (code that
                           does not import fails as Python does, status 1)
  --startup-delay DUR      start-up time (default 2.5s)
  --time-scale X           run every simulated duration X times faster
  --seed N                 reproducible noise
  --no-auto-load           decode only for HTTP requests
  --replay-log FILE        replay a real log instead of generating one
  --eagle                  EAGLE-3 speculative decoding (accept length)
  --sim-fail oom|nccl|crash-after-ready[=SECONDS]
                           fail like the real server does
  --sim-workers N          N worker processes holding GPU memory; with
                           --sim-stubborn-worker (one ignores SIGTERM),
                           --sim-setsid-worker (one leaves the session),
                           --sim-orphan-workers (not signalled on exit)
Use it with the "sim" launch preset:
  flightdeck server launch local --preset sim --model m --tp 8 --port 31000 --profile nccl-ll-ring
(with flightdeck on the PATH of the host's shell).`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if a == "-h" || a == "--help" {
					return cmd.Help()
				}
			}
			if code := sim.RunServer(cmd.Context(), args, os.Stdout, os.Stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	})
	cmd.AddCommand(newSimHostCmd())
	cmd.AddCommand(&cobra.Command{
		Use:   "version NAME",
		Short: "Print a simulated software version (the sim preset's version probes)",
		Long: `sim version prints the version the simulated host reports for NAME
(driver, cuda, nccl, torch, sglang, python): the "sim" launch preset's
version probes run it, so an experiment's fingerprint on the simulated host
is complete.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := sim.RunVersion(args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	})
	return cmd
}
