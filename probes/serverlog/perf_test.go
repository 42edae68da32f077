package serverlog

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog/synthlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var (
	benchDecode = []byte("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, ")
	benchOther  = [][]byte{
		[]byte("[2025-10-16 09:06:10 TP5] Load weight begin. avail mem=137.29 GB"),
		[]byte("[2025-12-26 06:08:27] INFO:     127.0.0.1:53078 - \"GET /health_generate HTTP/1.1\" 200 OK"),
		[]byte("(APIServer pid=84002) INFO 12-16 06:49:33 [launcher.py:46] Route: /openapi.json, Methods: HEAD, GET"),
		[]byte("2025-03-27 21:33:31,913 - INFO - flashinfer.jit: Finished loading JIT ops: batch_decode_with_kv_cache_dtype_q_bf16_dtype_kv_bf16"),
		[]byte("[2025-11-30 12:50:10] Capture cuda graph begin. This can take up to several minutes. avail mem=39.48 GB"),
		[]byte("[TensorRT-LLM][INFO] Max tokens in paged KV cache: 38400. Allocating 5033164800 bytes."),
	}
)

func reportLinesPerSec(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkParseSGLangDecode(b *testing.B) {
	b.SetBytes(int64(len(benchDecode)))
	for b.Loop() {
		if _, ok := ParseSGLangDecode(benchDecode); !ok {
			b.Fatal("not parsed")
		}
	}
	reportLinesPerSec(b)
}

func BenchmarkParseSGLangDecodeNonMatching(b *testing.B) {
	i := 0
	for b.Loop() {
		if _, ok := ParseSGLangDecode(benchOther[i%len(benchOther)]); ok {
			b.Fatal("parsed")
		}
		i++
	}
	reportLinesPerSec(b)
}

func BenchmarkParseVLLMThroughput(b *testing.B) {
	line := []byte("(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%")
	for b.Loop() {
		if _, ok := ParseVLLMThroughput(line); !ok {
			b.Fatal("not parsed")
		}
	}
	reportLinesPerSec(b)
}

// BenchmarkScannerNonMatching runs every parser and the failure classifier
// over lines without findings: the cost of a quiet log line.
func BenchmarkScannerNonMatching(b *testing.B) {
	var s Scanner
	emit := func(event.Payload) {}
	i := 0
	for b.Loop() {
		s.Feed(benchOther[i%len(benchOther)], i, emit)
		i++
	}
	reportLinesPerSec(b)
}

// BenchmarkScanMixed scans a generated SGLang log (synthlog: decode,
// prefill, access log and other lines) end to end: line splitting, all
// parsers, findings.
func BenchmarkScanMixed(b *testing.B) {
	data, lines := synthLog(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		n := 0
		if _, err := Scan(bytes.NewReader(data), func(event.Payload) { n++ }); err != nil || n == 0 {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkWriteJSONLMixed is BenchmarkScanMixed plus JSON encoding.
func BenchmarkWriteJSONLMixed(b *testing.B) {
	data, lines := synthLog(b, 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		if err := WriteJSONL(io.Discard, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkVsGrep compares the whole scanner with `grep -c 'gen throughput'`
// on the same generated log (synthlog, 540 MB by default: the size of
// issue 20's log; in a temp dir, removed afterwards). It is slow, so it
// runs only with FLIGHTDECK_BENCH_GREP=1:
//
//	FLIGHTDECK_BENCH_GREP=1 go test -run '^$' -bench VsGrep -benchtime 5x ./probes/serverlog/
//
// (FLIGHTDECK_BENCH_GREP_BYTES sets another size.) Each round runs, side by
// side: `grep -c 'gen throughput' FILE | cat` (the goal's anchor: grep
// writing to a pipe, which it cannot skip), the scanner (Scan: every
// parser, findings counted), WriteJSONL to io.Discard, and WriteJSONL into
// a pipe read by cat (what `flightdeck parse log FILE | cat` does, in
// process); the metrics are the medians of their ratios to the anchor
// over the rounds (use -benchtime 5x or more on a shared machine). The
// file is read once before timing so that all read from the page cache;
// the load average is logged before and after.
func BenchmarkVsGrep(b *testing.B) {
	if os.Getenv("FLIGHTDECK_BENCH_GREP") != "1" {
		b.Skip("set FLIGHTDECK_BENCH_GREP=1 to generate a 540 MB log and compare with grep")
	}
	if _, err := exec.LookPath("grep"); err != nil {
		b.Skip("no grep")
	}
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("no cat")
	}
	size := int64(540e6)
	if s := os.Getenv("FLIGHTDECK_BENCH_GREP_BYTES"); s != "" {
		size, _ = strconv.ParseInt(s, 10, 64)
	}
	path := filepath.Join(b.TempDir(), "sglang.log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	st, err := synthlog.Write(f, size)
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	defer os.Remove(path)

	countGrep := func() (int, time.Duration) {
		t0 := time.Now()
		out, err := exec.Command("sh", "-c", `grep -c 'gen throughput' "$1" | cat`, "sh", path).Output()
		if err != nil {
			b.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return n, time.Since(t0)
	}
	countScan := func() (int, time.Duration) {
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		n := 0
		if _, err := Scan(f, func(p event.Payload) {
			if _, ok := p.(event.Throughput); ok {
				n++
			}
		}); err != nil {
			b.Fatal(err)
		}
		return n, time.Since(t0)
	}
	jsonl := func(toCat bool) time.Duration {
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var w io.Writer = io.Discard
		var c *exec.Cmd
		var pw *os.File
		if toCat {
			pr, p, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			pw, w = p, p
			c = exec.Command(cat)
			c.Stdin = pr // and its output to the null device
			if err := c.Start(); err != nil {
				b.Fatal(err)
			}
			pr.Close()
		}
		if err := WriteJSONL(w, f); err != nil {
			b.Fatal(err)
		}
		if c != nil {
			pw.Close()
			if err := c.Wait(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	countGrep() // warm the page cache
	b.Logf("%d bytes, %d lines, %d decode lines; load average before: %s", st.Bytes, st.Lines, st.Decode, loadAverage())
	var grepS, scanR, jsonlR, catR []float64
	b.ResetTimer()
	for b.Loop() {
		// Side by side, grep first each time: the ratios of one round
		// share the machine's load of that moment.
		gn, gt := countGrep()
		sn, st := countScan()
		jt := jsonl(false)
		ct := jsonl(true)
		if gn != sn {
			b.Fatalf("grep counted %d lines, the scanner %d throughput findings", gn, sn)
		}
		r := func(d time.Duration) float64 { return d.Seconds() / gt.Seconds() }
		grepS = append(grepS, gt.Seconds())
		scanR, jsonlR, catR = append(scanR, r(st)), append(jsonlR, r(jt)), append(catR, r(ct))
		b.Logf("grep -c | cat %v, Scan %v (%.2fx), WriteJSONL %v (%.2fx), WriteJSONL | cat %v (%.2fx)",
			gt.Round(time.Millisecond), st.Round(time.Millisecond), r(st), jt.Round(time.Millisecond), r(jt),
			ct.Round(time.Millisecond), r(ct))
	}
	b.StopTimer()
	// Medians over the rounds (-benchtime Nx): one slow round from
	// another process on the machine does not decide the result.
	b.ReportMetric(median(grepS), "grep-s")
	b.ReportMetric(median(scanR), "scan/grep")
	b.ReportMetric(median(jsonlR), "jsonl/grep")
	b.ReportMetric(median(catR), "jsonl|cat/grep")
	b.Logf("median of %d rounds: Scan %.2fx, WriteJSONL %.2fx, WriteJSONL | cat %.2fx grep -c | cat; load average after: %s",
		len(scanR), median(scanR), median(jsonlR), median(catR), loadAverage())
}

// synthLog is a generated log of about size bytes and its line count.
func synthLog(b *testing.B, size int64) ([]byte, int) {
	var buf bytes.Buffer
	st, err := synthlog.Write(&buf, size)
	if err != nil {
		b.Fatal(err)
	}
	return buf.Bytes(), st.Lines
}

// loadAverage returns the 1, 5 and 15-minute load averages (Linux), or
// "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
