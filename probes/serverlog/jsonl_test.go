package serverlog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestWriteJSONLEagle3(t *testing.T) {
	f, err := os.Open("testdata/sglang-decode-eagle3-2025-10.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := WriteJSONL(&out, f); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		`{"type":"prefill","rank":"TP0","new_seq":1,"new_token":28,"cached_token":0,"token_usage":0,"running":0,"queued":0,"stamp":"2025-10-22 10:27:56","line":2}`,
		`{"type":"throughput","tok_s":0.39,"rank":"TP0","accept_length":2.17,"accept_rate":0.54,"server":"sglang","running":1,"queued":0,"tokens":108,"token_usage":0,"cuda_graph":true,"stamp":"2025-10-22 10:27:57","line":3,"idle_artifact":true}`,
		`{"type":"throughput","tok_s":178.86,"rank":"TP0","accept_length":1.95,"accept_rate":0.49,"server":"sglang","running":1,"queued":0,"tokens":186,"token_usage":0,"cuda_graph":true,"stamp":"2025-10-22 10:27:57","line":4}`,
	}
	if len(lines) != 6 {
		t.Fatalf("got %d records:\n%s", len(lines), out.String())
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("record %d\n got %s\nwant %s", i, lines[i], w)
		}
	}
}

func TestWriteJSONLFailuresAndShapes(t *testing.T) {
	in := strings.Join([]string{
		"# source: not line 1 of the fixture rules? it is: skipped but counted",
		"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
		"\x1b[31mERROR\x1b[0m 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory.\x1b]52;c;cHduZWQ=\x07 \u202e",
		"============ Serving Benchmark Result ============",
		"Traffic request rate:                    inf       ",
		"Output token throughput (tok/s):         100.5     ",
		"==================================================",
		"SpecDecoding metrics: Mean acceptance length: 2.44, Accepted: 10 tokens, Drafted: 20 tokens, Per-position acceptance rate: 0.600, 0.400, Avg Draft acceptance rate: 88.8%",
	}, "\n") // no final newline
	var out bytes.Buffer
	if err := WriteJSONL(&out, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		`{"type":"ready","url":"http://0.0.0.0:8000","line":2}`,
		`{"type":"failure","class":"oom","line":3,"text":"ERROR 05-01 14:39:06 [core.py:1131] torch.OutOfMemoryError: CUDA out of memory. \\u202e"}`,
		`{"type":"bench","tool":"sglang.bench_serving","output_tok_s":100.5,"request_rate":"inf","line":4}`,
		`{"type":"spec_decode","mean_acceptance_length":2.44,"draft_acceptance_rate":0.888,"accepted":10,"drafted":20,"per_position":[0.6,0.4],"line":8}`,
		`{"type":"failure_summary","failure":"oom","failure_also":[],"line":3}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if !json.Valid([]byte(l)) {
			t.Errorf("invalid JSON: %s", l)
		}
	}
}

func TestScanLinesHugeLine(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("first\n")
	in.WriteString("torch.OutOfMemoryError: CUDA out of memory. ")
	in.Write(bytes.Repeat([]byte("A"), 3<<20)) // 3 MiB on one line
	in.WriteString("\n[2025-11-11 04:06:27] Decode batch, #running-req: 46, gen throughput (token/s): 1447.08, #queue-req: 0, \n")
	var lens []int
	var nums []int
	if err := ScanLines(bytes.NewReader(in.Bytes()), func(line []byte, n int) {
		lens = append(lens, len(line))
		nums = append(nums, n)
	}); err != nil {
		t.Fatal(err)
	}
	if len(lens) != 3 || lens[1] != MaxLineBytes || nums[2] != 3 {
		t.Fatalf("lines %v numbered %v; want the long one cut to %d and the next still line 3", lens, nums, MaxLineBytes)
	}
	var out bytes.Buffer
	if err := WriteJSONL(&out, bytes.NewReader(in.Bytes())); err != nil {
		t.Fatal(err)
	}
	recs := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(recs) != 3 || !strings.Contains(recs[0], `"class":"oom","line":2`) || len(recs[0]) > 5000 ||
		!strings.Contains(recs[1], `"tok_s":1447.08`) || !strings.Contains(recs[1], `"line":3`) {
		t.Errorf("records: %d, first %d bytes: %.200s", len(recs), len(recs[0]), out.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteJSONLReportsWriteError(t *testing.T) {
	in := strings.NewReader("[2025-11-11 04:06:27] Decode batch, gen throughput (token/s): 1.00, #queue-req: 0\n")
	if err := WriteJSONL(failWriter{}, in); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteJSONL = %v, want the write error", err)
	}
}

func TestParsersDoNotAllocate(t *testing.T) {
	other := []byte("[2025-10-16 09:06:10 TP5] Load weight begin. avail mem=137.29 GB")
	decode := []byte("[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, ")
	vllm := []byte("(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%")
	coloured := []byte("\x1b[32m[2025-10-16 09:06:10 TP5]\x1b[0m Load weight begin. avail mem=137.29 GB")
	checks := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"decode parser, other line", 0, func() { ParseSGLangDecode(other) }},
		{"decode parser, coloured other line", 0, func() { ParseSGLangDecode(coloured) }},
		{"prefill parser, other line", 0, func() { ParseSGLangPrefill(other) }},
		{"vLLM parser, other line", 0, func() { ParseVLLMThroughput(other) }},
		{"spec parser, other line", 0, func() { ParseVLLMSpecDecode(other) }},
		{"ready parser, other line", 0, func() { ParseReady(other) }},
		{"decode parser, decode line (stamp string only)", 1, func() { ParseSGLangDecode(decode) }},
		{"vLLM parser, metrics line (stamp string only)", 1, func() { ParseVLLMThroughput(vllm) }},
	}
	for _, c := range checks {
		if n := testing.AllocsPerRun(200, c.fn); n > c.max {
			t.Errorf("%s: %v allocations, want ≤ %v", c.name, n, c.max)
		}
	}
	var s Scanner
	if n := testing.AllocsPerRun(200, func() { s.Feed(other, 1, func(event.Payload) {}) }); n != 0 {
		t.Errorf("Scanner.Feed on a line without findings: %v allocations", n)
	}
}

func TestWriteJSONLRefusesBinaryInput(t *testing.T) {
	text, err := os.ReadFile("testdata/sglang-decode-eagle3-2025-10.txt")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(text)
	zw.Close()
	elf := append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"), text...)
	random := make([]byte, 4096)
	rand.NewChaCha8([32]byte{1}).Read(random) // a NUL byte or invalid UTF-8: either rule refuses it
	utf16 := []byte{0xff, 0xfe, 'I', 0, 'N', 0, 'F', 0, 'O', 0}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"gzip", gz.Bytes(), "gzip-compressed"},
		{"ELF executable", elf, "NUL byte at offset 7"},
		{"random bytes", random, ""},
		{"UTF-16", utf16, "UTF-16"},
		{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x04}, "zstd"},
	} {
		var out bytes.Buffer
		err := WriteJSONL(&out, bytes.NewReader(tc.in))
		if !errors.Is(err, ErrBinaryInput) || !strings.Contains(err.Error(), "binary input (compressed?)") ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: WriteJSONL = %v, want a binary-input error mentioning %q", tc.name, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: wrote %q", tc.name, out.String())
		}
	}

	// Text stays text: empty input, colour codes, a few Latin-1 bytes, and
	// an input shorter than the sniff window.
	latin1 := append([]byte("[2025-10-22 10:27:57 TP0] prompt caf\xe9 na\xefve\n"), text...)
	for name, in := range map[string][]byte{
		"empty":   nil,
		"colour":  []byte("\x1b[32m[2025-10-22 10:27:57 TP0]\x1b[0m Decode batch. #running-req: 1, gen throughput (token/s): 12.50, #queue-req: 0, \n"),
		"latin-1": latin1,
		"short":   []byte("x"),
	} {
		if err := WriteJSONL(io.Discard, bytes.NewReader(in)); err != nil {
			t.Errorf("%s: WriteJSONL = %v", name, err)
		}
	}
}

// TestWriteJSONLMarksIdleArtifact: the throughput records of a point that
// the Aggregator drops carry "idle_artifact":true, every other record is
// unchanged, and the records stay in input order although the decision
// comes a point later.
func TestWriteJSONLMarksIdleArtifact(t *testing.T) {
	dp := func(stamp, rank string, tokS float64) string {
		return fmt.Sprintf("[%s %s] Decode batch. #running-req: 1, gen throughput (token/s): %.2f, #queue-req: 0, ", stamp, rank, tokS)
	}
	prefill := "[2025-10-22 10:00:00 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 48, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, "
	lines := []string{
		dp("2025-10-22 10:00:00", "DP0 TP0", 0.2), // 2: first round, near zero: dropped
		prefill, // 3
		dp("2025-10-22 10:00:00", "DP1 TP1", 0.3), // 4: same round
		prefill, // 5
		dp("2025-10-22 10:00:01", "DP0 TP0", 100),     // 6: next round decides
		dp("2025-10-22 10:00:01", "DP1 TP1", 110),     // 7
		"torch.OutOfMemoryError: CUDA out of memory.", // 8: a failure (stateful part) between points
		dp("2025-10-22 10:00:02", "DP0 TP0", 105),     // 9
		dp("2025-10-22 10:00:02", "DP1 TP1", 95),      // 10
		dp("2025-10-22 10:01:30", "DP0 TP0", 50),      // 11: after idle, not near zero: kept
		dp("2025-10-22 10:01:30", "DP1 TP1", 40),      // 12
		dp("2025-10-22 10:01:31", "DP0 TP0", 101),     // 13
		dp("2025-10-22 10:01:31", "DP1 TP1", 99),      // 14
		prefill,                                       // 15
		dp("2025-10-22 10:05:00", "DP0 TP0", 0.4),     // 16: after idle, the last point: dropped at the end
		dp("2025-10-22 10:05:00", "DP1 TP1", 0.1),     // 17
		prefill, // 18
	}
	in := "# source: synthetic\n" + strings.Join(lines, "\n") + "\n"
	for _, workers := range []int{1, 3} {
		var out bytes.Buffer
		pre := func() {
			old := runtime.GOMAXPROCS(workers)
			defer runtime.GOMAXPROCS(old)
			if err := WriteJSONL(&out, strings.NewReader(in)); err != nil {
				t.Fatal(err)
			}
		}
		pre()
		var marked, order []int
		for _, rec := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(rec), &m); err != nil {
				t.Fatalf("invalid record %s: %v", rec, err)
			}
			line, _ := m["line"].(float64)
			if m["type"] != "failure_summary" {
				order = append(order, int(line))
			}
			if v, ok := m["idle_artifact"]; ok {
				if v != true || m["type"] != "throughput" {
					t.Errorf("idle_artifact on %s", rec)
				}
				marked = append(marked, int(line))
			}
		}
		if !slices.IsSorted(order) || len(order) != 17 {
			t.Errorf("records out of order or missing: lines %v", order)
		}
		if fmt.Sprint(marked) != "[2 4 16 17]" {
			t.Errorf("marked lines %v, want [2 4 16 17] (the first round and the last, both near zero after idle)\n%s", marked, out.String())
		}
	}
}

// TestWriteJSONLIdleArtifactAgreesWithAggregator: over every fixture, the
// marked records are the lines of the points that the Aggregator (as the
// cockpit runs it) drops.
func TestWriteJSONLIdleArtifactAgreesWithAggregator(t *testing.T) {
	total := 0
	for name, data := range fixtureTexts(t) {
		var a Aggregator
		var rates []event.TokRate
		if _, err := Scan(bytes.NewReader(data), func(p event.Payload) {
			switch v := p.(type) {
			case event.Throughput:
				rates = a.Add(rates, v)
			case event.SpecDecode:
				a.AddSpec(v)
			}
		}); err != nil {
			t.Fatal(err)
		}
		rates = a.Flush(rates)
		wantN, wantSum := 0, 0.0
		for _, r := range rates {
			if r.Dropped {
				wantN += r.Ranks
				wantSum += r.TokPerSec
			}
		}
		var out bytes.Buffer
		if err := WriteJSONL(&out, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		gotN, gotSum := 0, 0.0
		for _, rec := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if strings.Contains(rec, `"idle_artifact":true`) {
				var m struct {
					TokS float64 `json:"tok_s"`
				}
				if err := json.Unmarshal([]byte(rec), &m); err != nil {
					t.Fatal(err)
				}
				gotN++
				gotSum += m.TokS
			}
		}
		if gotN != wantN || math.Abs(gotSum-wantSum) > 1e-6 {
			t.Errorf("%s: %d records marked (tok/s sum %v), the Aggregator dropped %d lines (sum %v)", name, gotN, gotSum, wantN, wantSum)
		}
		total += gotN
	}
	if total == 0 {
		t.Error("no fixture has an idle artefact: the test checks nothing")
	}
}
