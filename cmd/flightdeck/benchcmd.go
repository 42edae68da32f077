package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/flightdeck-dev/flightdeck/probes/bench"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sanitize"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// benchFlags are the options of `flightdeck bench`.
type benchFlags struct {
	server   serverFlags
	endpoint string
	cfg      event.BenchConfig
	warmup   int
	port     int
	format   string
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench HOST|URL",
		Short: "Benchmark the inference server's streaming API (what the cockpit's b does)",
		Long: `bench drives the OpenAI-compatible API of the inference server on HOST (an SSH
target, an alias, a [hosts.NAME] of the config, or "local"), through the SSH
connection (a port-forward with no local listener), or at URL
(http://127.0.0.1:30000) directly. It sends streaming /v1/completions (or
/v1/chat/completions) requests with random prompts of --input-len tokens and
--output-len tokens each (max_tokens with ignore_eos), --concurrency at a
time, --requests of them or for --duration, at --rate requests/s (0: as fast
as concurrency allows), after --warmup requests that are not measured.

The metrics have the definitions of sglang.bench_serving and vllm bench
serve: TTFT to the first chunk with content, ITL between content chunks,
TPOT = (E2E - TTFT) / (output tokens - 1), output tok/s = generated tokens /
duration; tokens from the usage chunk (stream_options.include_usage).

On HOST the server's port comes from flightdeck's last launch (its pidfile),
else the host's configured port, else the preset's default; --port overrides.

Exit statuses: 0 success; 1 cannot connect, no server, or no request
succeeded; 2 bad flags.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.ExactArgs(1)(cmd, args); err != nil {
				return usageError(cmd, err)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	cmd.SetFlagErrorFunc(usageError)
	fl := cmd.Flags()
	f.server.add(cmd)
	fl.StringVar(&f.endpoint, "endpoint", "completions", "API: completions or chat")
	fl.IntVar(&f.cfg.InputLen, "input-len", event.BenchDefaultInputLen, "prompt length, tokens (chat: words)")
	fl.IntVar(&f.cfg.OutputLen, "output-len", event.BenchDefaultOutputLen, "tokens to generate per request")
	fl.IntVarP(&f.cfg.Concurrency, "concurrency", "c", 1, "requests in flight at most")
	fl.IntVarP(&f.cfg.Requests, "requests", "n", event.BenchDefaultRequests, "measured requests (or --duration)")
	fl.DurationVar(&f.cfg.Duration, "duration", 0, "send requests for this long instead of --requests (those in flight finish)")
	fl.Float64Var(&f.cfg.Rate, "rate", 0, "request rate, req/s (0: as fast as --concurrency allows)")
	fl.BoolVar(&f.cfg.Poisson, "poisson", false, "Poisson arrivals (exponential gaps) at --rate")
	fl.IntVar(&f.warmup, "warmup", event.BenchDefaultWarmup, "warm-up requests, not measured")
	fl.Uint64Var(&f.cfg.Seed, "seed", event.BenchDefaultSeed, "seed of the random prompts and arrivals")
	fl.StringVar(&f.cfg.PromptFile, "prompts", "", "file of prompts, one a line, used in turn instead of random ones")
	fl.StringVar(&f.cfg.Model, "model", "", "model name (default: the first of GET /v1/models)")
	fl.DurationVar(&f.cfg.Timeout, "timeout", event.BenchDefaultTimeout, "time limit of one request")
	fl.IntVar(&f.port, "port", 0, "the server's HTTP port on HOST (default: as described above)")
	fl.StringVar(&f.format, "format", "table", "output: table or json")
	return cmd
}

// config is the benchmark config the flags ask for, or why it is not valid.
func (f *benchFlags) config(cmd *cobra.Command) (event.BenchConfig, error) {
	c := f.cfg
	c.Endpoint = event.BenchEndpoint(f.endpoint)
	if c.Duration < 0 {
		return c, fmt.Errorf("--duration %v: must be positive", c.Duration)
	}
	if cmd.Flags().Changed("duration") && !cmd.Flags().Changed("requests") {
		c.Requests = 0
	}
	c.Warmup = f.warmup
	if f.warmup == 0 {
		c.Warmup = -1 // none (0 is the default in a Config)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"input-len", c.InputLen}, {"output-len", c.OutputLen}, {"concurrency", c.Concurrency}, {"requests", c.Requests}} {
		if f.v <= 0 && !(f.name == "requests" && c.Duration > 0) {
			return c, fmt.Errorf("--%s %d: must be positive", f.name, f.v) // the first bad flag, in a fixed order
		}
	}
	if f.warmup < 0 {
		return c, fmt.Errorf("--warmup %d: want 0 (none) or more", f.warmup)
	}
	if c.Seed == 0 {
		return c, errors.New("--seed 0: use a positive seed")
	}
	if c.Timeout <= 0 {
		return c, errors.New("--timeout must be positive")
	}
	if f.format != "table" && f.format != "json" {
		return c, fmt.Errorf("--format %q: want table or json", f.format)
	}
	if f.port < 0 || f.port > 65535 {
		return c, fmt.Errorf("--port %d: want 1-65535", f.port)
	}
	c = c.Defaults()
	return c, c.Validate()
}

func (f *benchFlags) run(cmd *cobra.Command, target string) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return usageError(cmd, err)
	}
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	progress := progressPrinter(stderr)
	var res *event.BenchResult
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		if f.port != 0 {
			return usageError(cmd, errors.New("--port is for HOST: put the port in the URL"))
		}
		res, err = bench.Run(ctx, nil, target, cfg, func(p event.BenchProgress) { progress(p, false) })
		if res != nil {
			res.Target = strings.TrimRight(target, "/")
		}
	} else {
		res, err = f.runOnHost(ctx, target, cfg, progress)
	}
	progress(event.BenchProgress{}, true)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		writeBenchTable(out, res)
	}
	if res.Completed == 0 && !res.Cancelled {
		fmt.Fprintln(stderr, "flightdeck: no request succeeded")
		return exitCode(1)
	}
	return nil
}

// runOnHost benchmarks the server on alias through its SSH connection.
func (f *benchFlags) runOnHost(ctx context.Context, alias string, cfg event.BenchConfig, progress func(event.BenchProgress, bool)) (*event.BenchResult, error) {
	h, err := f.server.dial(ctx, alias)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, httpHint(alias))
	}
	defer h.host.Close()
	if _, ok := h.host.(remote.Dialer); !ok {
		return nil, fmt.Errorf("%s: this host cannot forward ports", alias)
	}
	// A benchmark loads the server but does not change the host: it runs
	// whoever drives (no driver lock).
	s, err := sessions.Open(sessions.Options{Name: alias, Config: h.cfg, Journal: sessions.JournalOptions{Off: true}})
	if err != nil {
		return nil, err
	}
	defer s.Close(context.WithoutCancel(ctx), nil)
	port := f.port
	at := f.server.attach(ctx, h)
	at.BenchTarget = alias
	at.ServerPort = func() int { return port }
	if err := s.Attach(ctx, at); err != nil {
		return nil, err
	}
	if port == 0 {
		c := s.Control()
		found, err := c.Find(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case !found.Running:
			return nil, fmt.Errorf("no inference server found on %s (flightdeck server status %s says what it sees): name its HTTP port with --port, or with --log-dir the directory of the launch logs and pidfile it was started with", alias, alias)
		case found.Record != nil && found.How == server.ByPidfile && found.Record.Launch.Port > 0:
			port = found.Record.Launch.Port
		case found.Port > 0:
			port = found.Port
		default:
			port = c.DefaultPort()
		}
	}
	s.OnEvent(func(e event.Event) {
		if p, ok := e.Data.(event.BenchProgress); ok {
			progress(p, false)
		}
	})
	return s.Bench(ctx, cfg)
}

// httpHint is what a failed connection to target adds: bench takes an
// SSH target or an HTTP URL, and HOST:PORT (localhost:30000) is read as
// the former. When target reads as HOST:PORT the hint names the URL.
func httpHint(target string) string {
	if _, port, err := net.SplitHostPort(target); err == nil && !strings.Contains(target, "@") {
		if n, err := strconv.Atoi(port); err == nil && n > 0 && n <= 65535 {
			return "bench takes an SSH target or a URL: for the HTTP server at " + sanitize.String(target) + " write http://" + sanitize.String(target)
		}
	}
	return "for an HTTP URL write http://HOST:PORT"
}

// progressPrinter returns a function that shows progress on one line of w
// when w is a terminal (final: clear the line), and does nothing otherwise.
func progressPrinter(w io.Writer) func(p event.BenchProgress, final bool) {
	file, ok := w.(*os.File)
	if !ok || !term.IsTerminal(file.Fd()) {
		return func(event.BenchProgress, bool) {}
	}
	shown := false
	return func(p event.BenchProgress, final bool) {
		if final {
			if shown {
				fmt.Fprint(w, "\r\x1b[K")
			}
			return
		}
		shown = true
		if p.Warmup {
			fmt.Fprint(w, "\r\x1b[Kwarming up…")
			return
		}
		of := ""
		switch {
		case p.Total > 0:
			of = "/" + strconv.Itoa(p.Total)
		case p.Limit > 0:
			of = fmt.Sprintf(" in %s of %s", p.Elapsed.Round(time.Second), p.Limit)
		}
		fmt.Fprintf(w, "\r\x1b[K%d%s done, %d failed, %d in flight, %.1f tok/s", p.Done, of, p.Failed, p.InFlight, p.TokPerSec)
	}
}

// writeBenchTable prints res as sglang.bench_serving's "Serving Benchmark
// Result" block: 40-column labels, a value, section rules of 50.
func writeBenchTable(w io.Writer, res *event.BenchResult) {
	row := func(label string, v any) {
		var s string
		switch v := v.(type) {
		case float64:
			s = strconv.FormatFloat(v, 'f', 2, 64)
			if math.IsInf(v, 1) {
				s = "inf"
			}
		default:
			s = fmt.Sprint(v)
		}
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("%-40s %-10s", label, s), " "))
	}
	c := res.Config
	fmt.Fprintln(w, center(" Serving Benchmark Result ", 50, '='))
	if res.Cancelled {
		row("Cancelled:", "yes (the requests that finished)")
	}
	row("Backend:", "flightdeck "+string(c.Endpoint))
	row("Target:", sanitize.String(res.Target))
	row("Model:", sanitize.String(c.Model))
	rate := math.Inf(1)
	if c.Rate > 0 {
		rate = c.Rate
	}
	row("Traffic request rate:", rate)
	row("Max request concurrency:", c.Concurrency)
	row("Successful requests:", res.Completed)
	row("Failed requests:", res.Failed)
	row("Benchmark duration (s):", res.Duration.Seconds())
	row("Total input tokens:", res.InputTokens)
	row("Total generated tokens:", res.OutputTokens)
	row("Request throughput (req/s):", res.ReqPerSec)
	in := 0.0
	if s := res.Duration.Seconds(); s > 0 {
		in = float64(res.InputTokens) / s
	}
	row("Input token throughput (tok/s):", in)
	row("Output token throughput (tok/s):", res.OutputTokPerSec)
	row("Total token throughput (tok/s):", res.TotalTokPerSec)
	row("Concurrency:", res.Concurrency)
	section := func(title, name string, d event.Dist, maxRow bool) {
		fmt.Fprintln(w, center(title, 50, '-'))
		val := func(v float64) any {
			if d.N == 0 {
				return "n/a" // no samples (one-token outputs have no TPOT or ITL), not 0 ms
			}
			return v
		}
		row("Mean "+name+" (ms):", val(d.Mean))
		row("Median "+name+" (ms):", val(d.Median))
		row("P90 "+name+" (ms):", val(d.P90))
		row("P99 "+name+" (ms):", val(d.P99))
		if maxRow {
			row("Max "+name+" (ms):", val(d.Max))
		}
	}
	section("End-to-End Latency", "E2E Latency", res.E2E, false)
	section("Time to First Token", "TTFT", res.TTFT, false)
	section("Time per Output Token (excl. 1st token)", "TPOT", res.TPOT, false)
	section("Inter-Token Latency", "ITL", res.ITL, true)
	fmt.Fprintln(w, strings.Repeat("=", 50))
	for _, e := range res.Errors {
		fmt.Fprintf(w, "failed ×%d: %s\n", e.Count, sanitize.String(e.Err))
	}
}

// center is Python's format(s, c+"^"+n): s centred in n columns, the odd
// column on the right.
func center(s string, n int, c rune) string {
	pad := n - len([]rune(s))
	if pad <= 0 {
		return s
	}
	return strings.Repeat(string(c), pad/2) + s + strings.Repeat(string(c), pad-pad/2)
}
