package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/gpu"
	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
)

func newParseCmd() *cobra.Command {
	parse := &cobra.Command{
		Use:   "parse",
		RunE:  runGroup,
		Short: "Parse saved server logs or nvidia-smi output into JSON Lines",
		Long: `parse runs flightdeck's parsers over saved text, for scripts and for checking the
parsers against output from your own machines. Both commands read FILE, or
standard input when FILE is "-", and write one JSON object per line.`,
	}

	logCmd := &cobra.Command{
		Use:   "log FILE|-",
		Short: "Find throughput, readiness, failures and benchmark tables in a server log",
		Long: `parse log reads an SGLang or vLLM server log (or sglang.bench_serving /
vllm bench serve output) and writes one JSON object per finding, in order:

  {"type":"throughput","tok_s":178.86,"rank":"TP0","accept_length":2.17,"accept_rate":0.54,"line":3}
  {"type":"ready","line":N}
  {"type":"failure","class":"oom","line":N,"text":"..."}
  {"type":"bench","output_tok_s":...,"ttft_mean_ms":...,"itl_median_ms":...,"successful_requests":...}

Fields absent from a line are omitted. "line" is the physical line number.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, closeIn, err := openInput(cmd, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			if err := output(cmd.OutOrStdout(), args[0], func(w io.Writer) error { return serverlog.WriteJSONL(w, in) }); err != nil {
				return fmt.Errorf("parse log: %w", err)
			}
			return nil
		},
	}

	var fields string
	gpuCmd := &cobra.Command{
		Use:   "gpu [--fields f1,f2,...] FILE|-",
		Short: "Parse nvidia-smi --query-gpu CSV into one JSON object per GPU row",
		Long: `parse gpu reads nvidia-smi --query-gpu output (--format=csv, with or without
header and units) and writes one JSON object per GPU row with the keys index,
name, pci_bus_id, util_gpu_pct, util_mem_pct, mem_used_mib, mem_total_mib,
power_draw_w, power_limit_w, temp_c, sm_clock_mhz, mem_clock_mhz, pstate,
pcie_gen_current, pcie_width_current (and every other column of a header
under its own name). A value is a number when valid, else the literal token
nvidia-smi printed, such as "[N/A]" — never 0. A whole-command failure
("Unable to determine the device handle for GPU ...", "No devices were
found", ...) gives {"type":"failure","failure_class":...,"pci_bus_id":...}.

Headerless input needs --fields, the --query-gpu list it was produced with.
A whole nvidia_gpu_exporter capture file is read from its "load ::
query-gpu" section.
Rows that cannot be read are reported on stderr with their line numbers; the
good rows are still written and the exit status is 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, closeIn, err := openInput(cmd, args[0])
			if err != nil {
				return err
			}
			defer closeIn()
			var list []string
			if fields != "" {
				for _, f := range strings.Split(fields, ",") {
					if f = strings.TrimSpace(f); f != "" {
						list = append(list, f)
					}
				}
			}
			err = output(cmd.OutOrStdout(), args[0], func(w io.Writer) error { return gpu.WriteJSONL(w, in, list) })
			var garbled *gpu.GarbledError
			if errors.As(err, &garbled) {
				fmt.Fprintln(cmd.ErrOrStderr(), "flightdeck: parse gpu:", err)
				return exitCode(1)
			}
			if err != nil {
				return fmt.Errorf("parse gpu: %w", err)
			}
			return nil
		},
	}
	gpuCmd.Flags().StringVar(&fields, "fields", "", "comma-separated --query-gpu field names of headerless input")

	parse.AddCommand(logCmd, gpuCmd)
	return parse
}

// output runs write on w: buffered for a file, and flushed also after an
// error (the good records before a garbled row are kept); unbuffered for
// standard input, which may be a live stream (nvidia-smi -lms | parse gpu -)
// whose records should come out as they are read. A pipe's buffer is
// enlarged first (growPipe).
func output(w io.Writer, input string, write func(io.Writer) error) error {
	growPipe(w)
	if input == "-" {
		return write(w)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	err := write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// openInput opens name, or standard input for "-".
func openInput(cmd *cobra.Command, name string) (io.Reader, func(), error) {
	if name == "-" {
		return cmd.InOrStdin(), func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}
