package serverlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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

// BenchmarkScanMixed scans a generated SGLang log (decode, prefill, access
// log and other lines) end to end: line splitting, all parsers, findings.
func BenchmarkScanMixed(b *testing.B) {
	var buf bytes.Buffer
	lines := writeSyntheticLog(&buf, 4<<20)
	data := buf.Bytes()
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
	var buf bytes.Buffer
	lines := writeSyntheticLog(&buf, 4<<20)
	data := buf.Bytes()
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
// on the same generated 1 GiB log (in a temp dir, removed afterwards). It is
// slow, so it runs only with FLIGHTDECK_BENCH_GREP=1:
//
//	FLIGHTDECK_BENCH_GREP=1 go test -run '^$' -bench VsGrep -benchtime 1x ./probes/serverlog/
//
// It reports grep's time, the scanner's (Scan: every parser, findings
// counted) and WriteJSONL's (to io.Discard), and their ratios to grep:
// each round runs all three side by side, and the metrics are the medians
// over the rounds (use -benchtime 5x or more on a shared machine). The
// file is read once before timing so that both read from the page cache;
// the load average is logged before and after.
func BenchmarkVsGrep(b *testing.B) {
	if os.Getenv("FLIGHTDECK_BENCH_GREP") != "1" {
		b.Skip("set FLIGHTDECK_BENCH_GREP=1 to generate a 1 GiB log and compare with grep")
	}
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("no grep")
	}
	size := int64(1 << 30)
	if s := os.Getenv("FLIGHTDECK_BENCH_GREP_BYTES"); s != "" {
		size, _ = strconv.ParseInt(s, 10, 64)
	}
	path := filepath.Join(b.TempDir(), "sglang.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	writeSyntheticLog(w, size)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	defer os.Remove(path)

	countGrep := func() (int, time.Duration) {
		t0 := time.Now()
		out, err := exec.Command(grep, "-c", "gen throughput", path).Output()
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
	jsonl := func() time.Duration {
		t0 := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := WriteJSONL(io.Discard, f); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	countGrep() // warm the page cache
	b.Logf("load average before: %s", loadAverage())
	var grepS, scanS, jsonlS, scanR, jsonlR []float64
	b.ResetTimer()
	for b.Loop() {
		// Side by side, grep first each time: the ratios of one round
		// share the machine's load of that moment.
		gn, gt := countGrep()
		sn, st := countScan()
		jt := jsonl()
		if gn != sn {
			b.Fatalf("grep counted %d lines, the scanner %d throughput findings", gn, sn)
		}
		grepS, scanS, jsonlS = append(grepS, gt.Seconds()), append(scanS, st.Seconds()), append(jsonlS, jt.Seconds())
		scanR, jsonlR = append(scanR, st.Seconds()/gt.Seconds()), append(jsonlR, jt.Seconds()/gt.Seconds())
		b.Logf("%d MiB, %d decode lines: grep -c %v, Scan %v (%.2fx), WriteJSONL %v (%.2fx)",
			size>>20, gn, gt.Round(time.Millisecond), st.Round(time.Millisecond), st.Seconds()/gt.Seconds(),
			jt.Round(time.Millisecond), jt.Seconds()/gt.Seconds())
	}
	b.StopTimer()
	// Medians over the rounds (-benchtime Nx): one slow round from
	// another process on the machine does not decide the result.
	b.ReportMetric(median(grepS), "grep-s")
	b.ReportMetric(median(scanS), "scan-s")
	b.ReportMetric(median(jsonlS), "jsonl-s")
	b.ReportMetric(median(scanR), "scan/grep")
	b.ReportMetric(median(jsonlR), "jsonl/grep")
	b.Logf("median of %d rounds: Scan %.2fx grep, WriteJSONL %.2fx grep; load average after: %s",
		len(scanR), median(scanR), median(jsonlR), loadAverage())
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

// writeSyntheticLog writes about size bytes of an SGLang server log under
// load: per request an access-log line and a prefill line, a decode line
// per 40 steps of each running batch, and some start-up noise; the rank
// tag and numbers vary. It returns the number of lines.
func writeSyntheticLog(w io.Writer, size int64) int {
	r := rand.New(rand.NewPCG(1, 2))
	var written int64
	lines := 0
	buf := make([]byte, 0, 512)
	sec := 0
	for written < size {
		stamp := fmt.Sprintf("2025-10-22 %02d:%02d:%02d", 10+sec/3600%10, sec/60%60, sec%60)
		buf = buf[:0]
		switch k := r.IntN(10); {
		case k < 6:
			buf = fmt.Appendf(buf, "[%s TP0] Decode batch. #running-req: %d, #token: %d, token usage: 0.%02d, accept len: %.2f, accept rate: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d, \n",
				stamp, 1+r.IntN(64), r.IntN(200000), r.IntN(100), 1+r.Float64()*2, r.Float64(), 50+r.Float64()*2000, r.IntN(8))
		case k < 8:
			buf = fmt.Appendf(buf, "[%s TP0] Prefill batch. #new-seq: 1, #new-token: %d, #cached-token: %d, token usage: 0.%02d, #running-req: %d, #queue-req: %d, \n",
				stamp, r.IntN(4000), r.IntN(4000), r.IntN(100), r.IntN(64), r.IntN(8))
		case k < 9:
			buf = fmt.Appendf(buf, "[%s] INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", stamp, 30000+r.IntN(30000))
		default:
			buf = append(buf, benchOther[r.IntN(len(benchOther))]...)
			buf = append(buf, '\n')
		}
		n, err := w.Write(buf)
		if err != nil {
			panic(err)
		}
		written += int64(n)
		lines++
		if lines%7 == 0 {
			sec++
		}
	}
	return lines
}
