package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/sim"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
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

It accepts SGLang's launch flags (--model-path, --tp-size, --port, --host,
…) and simulation flags such as --startup-delay, --seed, --no-auto-load,
--sim-fail oom|crash-after-ready. Use it with the "sim" launch preset:
  flightdeck server launch local --preset sim --model m --tp 8 --port 31000 --profile nccl-ll-ring
(with flightdeck on the PATH of the host's shell).`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := sim.RunServer(cmd.Context(), args, os.Stdout, os.Stderr); code != 0 {
				return exitCode(code)
			}
			return nil
		},
	})
	return cmd
}
