package serverlog

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// scanSequential is the reference: every line through Scanner.Feed.
func scanSequential(data []byte) ([]event.Payload, []event.ServerFailure) {
	var out []event.Payload
	s := &Scanner{}
	emit := func(p event.Payload) { out = append(out, p) }
	_ = ScanLines(bytes.NewReader(data), func(line []byte, n int) { s.Feed(line, n, emit) })
	s.Flush(emit)
	return out, s.Failures()
}

func scanParallel(data []byte, workers, blockSize int) ([]event.Payload, []event.ServerFailure) {
	var out []event.Payload
	s, _ := scanBlocks(bytes.NewReader(data), func(p event.Payload) { out = append(out, p) }, nil, workers, blockSize, MaxLineBytes)
	return out, s.Failures()
}

// scanPreEncoded is scanParallel with WriteJSONL's pre-encoding and idle
// marking: the JSON records in the order written. With fast, the workers
// write SGLang's batch lines from their text, as WriteJSONL does.
func scanPreEncoded(data []byte, workers, blockSize int, fast bool) []byte {
	var out []byte
	m := newIdleMarker(func(b []byte, _ bool) { out = append(out, b...) })
	pre, emit := jsonlPre(m, fast, func() {})
	_, _ = scanBlocks(bytes.NewReader(data), emit, &pre, workers, blockSize, MaxLineBytes)
	m.flush()
	return out
}

// encodeSequential is the reference for scanPreEncoded: the findings of
// scanSequential, encoded one by one and marked.
func encodeSequential(found []event.Payload) []byte {
	var out []byte
	m := newIdleMarker(func(b []byte, _ bool) { out = append(out, b...) })
	for _, p := range found {
		m.record(p, appendPayload(nil, p), false)
	}
	m.flush()
	return out
}

func checkSameScan(t *testing.T, name string, data []byte, workers, blockSize int) {
	t.Helper()
	want, wantF := scanSequential(data)
	wantJSON := encodeSequential(want)
	for _, fast := range []bool{false, true} {
		if got := scanPreEncoded(data, workers, blockSize, fast); !bytes.Equal(got, wantJSON) {
			t.Fatalf("%s (workers %d, block %d, fast %v): pre-encoded scan differs:\n got %s\nwant %s", name, workers, blockSize, fast, got, wantJSON)
		}
	}
	got, gotF := scanParallel(data, workers, blockSize)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotF, wantF) {
		n := min(len(got), len(want))
		i := 0
		for i < n && reflect.DeepEqual(got[i], want[i]) {
			i++
		}
		t.Fatalf("%s (workers %d, block %d): parallel scan differs at finding %d of %d/%d:\n got %+v\nwant %+v",
			name, workers, blockSize, i, len(got), len(want), at(got, i), at(want, i))
	}
}

func at(v []event.Payload, i int) any {
	if i < len(v) {
		return v[i]
	}
	return "(none)"
}

func fixtureTexts(t testing.TB) map[string][]byte {
	files, _ := filepath.Glob("testdata/*.txt")
	out := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

func TestScanParallelMatchesSequential(t *testing.T) {
	texts := fixtureTexts(t)
	var all bytes.Buffer
	for name, data := range texts {
		for _, bs := range []int{1, 7, 64, 4096} {
			checkSameScan(t, name, data, 3, bs)
		}
		all.Write(data)
		all.WriteByte('\n')
	}
	// Everything at once, with tables, tracebacks and rank context crossing
	// block boundaries.
	for _, bs := range []int{1, 100, 1000, scanBlockSize} {
		checkSameScan(t, "all fixtures", all.Bytes(), 4, bs)
	}

	// Shuffled lines of every fixture plus edge cases (in a fixed order,
	// so that a failure can be repeated).
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(texts)) {
		lines = append(lines, strings.Split(string(texts[name]), "\n")...)
	}
	lines = append(lines, "", "\r", "Killed", "Benchmark ...", "Warmup ...",
		"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
		"[2025-01-01 00:00:00] The server is fired up and ready to roll!",
		"\x1b[31mRuntimeError: CUDA error: an illegal memory access was encountered\x1b[0m",
		strings.Repeat("x", 70000))
	r := rand.New(rand.NewPCG(7, 8))
	for round := range 40 {
		var b strings.Builder
		if round%3 == 0 {
			b.WriteString("# source: shuffled\n")
		}
		for range 200 {
			b.WriteString(lines[r.IntN(len(lines))])
			if r.IntN(10) == 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		data := []byte(b.String())
		if round%2 == 0 {
			data = bytes.TrimSuffix(data, []byte("\n")) // no final newline
		}
		checkSameScan(t, "shuffled", data, 1+round%4, 1+r.IntN(3000))
	}
}

// TestScanParallelPrefixInsideTable: an SGLang-prefixed line that a
// benchmark table takes as a row does not count as an SGLang line; the
// next prefixed line in the block does, and the uvicorn line after it is
// then not readiness. (The parallel scan once kept only the first prefixed
// line of a block.)
func TestScanParallelPrefixInsideTable(t *testing.T) {
	text := "============ Serving Benchmark Result ============\n" +
		"[2025-10-16 09:06:10 TP7] Load weight begin. avail mem=137.52 GB\n" +
		"\n" +
		"some line\n" +
		"[2025-08-02 06:06:21 TP2] Pyspy failed to dump PID 171. Error: /bin/dash: 1: py-spy: not found\n" +
		"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
	for _, bs := range []int{1, 64, 4096} {
		checkSameScan(t, "prefix inside a table", []byte(text), 2, bs)
	}
	got, _ := scanParallel([]byte(text), 2, 4096)
	for _, p := range got {
		if _, ok := p.(event.ServerReady); ok {
			t.Errorf("uvicorn line after an SGLang line reported as readiness: %+v", p)
		}
	}
	// A prefixed line that ends a table is applied after it, as a line.
	checkSameScan(t, "prefix ends a table", []byte("Warmup ...\n[2025-08-02 06:06:21 TP2] x\nINFO:     Uvicorn running on http://0.0.0.0:8000\n"), 2, 4096)
}

func TestScanParallelLongLines(t *testing.T) {
	var in bytes.Buffer
	in.WriteString("# source: x\nfirst\n")
	in.WriteString("torch.OutOfMemoryError: CUDA out of memory. ")
	in.Write(bytes.Repeat([]byte("A"), 3<<20))
	in.WriteString("\n[2025-11-11 04:06:27] Decode batch, #running-req: 46, gen throughput (token/s): 1447.08, #queue-req: 0, \nlast without newline Killed")
	checkSameScan(t, "long lines", in.Bytes(), 2, 1<<20)
	got, _ := scanParallel(in.Bytes(), 2, 1<<20)
	if len(got) != 3 {
		t.Fatalf("findings %d: %+v", len(got), got)
	}
	if f, ok := got[0].(event.ServerFailure); !ok || f.Line != 3 || len(f.Text) > 5000 {
		t.Errorf("first finding %+v", got[0])
	}
	if tp, ok := got[1].(event.Throughput); !ok || tp.Line != 4 {
		t.Errorf("second finding %+v", got[1])
	}
	if f, ok := got[2].(event.ServerFailure); !ok || f.Class != event.FailKilled || f.Line != 5 {
		t.Errorf("third finding %+v", got[2])
	}
}

func FuzzScanParallel(f *testing.F) {
	for _, data := range fixtureTexts(f) {
		f.Add(data, uint16(13), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, blockSize uint16, workers uint8) {
		checkSameScan(t, "fuzz", data, 1+int(workers%4), 1+int(blockSize))
	})
}

// chunkReader returns its data in pieces of the sizes it is given, in
// turn, with an occasional empty read; then io.EOF.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.sizes[r.i%len(r.sizes)], len(p), len(r.data))
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// cutLines is the reference for blockSource: the lines of data (a last
// one without a newline counts when it is not empty), each cut to maxLine
// bytes and ended with '\n'.
func cutLines(data []byte, maxLine int) []byte {
	var out []byte
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		out = append(append(out, line[:min(len(line), maxLine)]...), '\n')
	}
	return out
}

func TestBlockSourceCutsLinesLikeScanLines(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 3000 {
		var data []byte
		for range r.IntN(30) {
			data = append(data, bytes.Repeat([]byte{'a' + byte(r.IntN(26))}, r.IntN(40))...)
			if r.IntN(4) > 0 {
				data = append(data, '\n')
			}
		}
		maxLine := 1 + r.IntN(50)
		target := 1 + r.IntN(100)
		sizes := []int{1 + r.IntN(70), r.IntN(3), 1 + r.IntN(200)}
		src := blockSource{r: &chunkReader{data: data, sizes: sizes}, maxLine: maxLine}
		var got []byte
		for {
			blk, err := src.fill(make([]byte, 0, target+r.IntN(10)), target)
			if len(blk) > 0 && blk[len(blk)-1] != '\n' {
				t.Fatalf("round %d: block %q does not end a line", round, blk)
			}
			got = append(got, blk...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if want := cutLines(data, maxLine); !bytes.Equal(got, want) {
			t.Fatalf("round %d (maxLine %d, target %d, reads %v):\n got %q\nwant %q\n  in %q", round, maxLine, target, sizes, got, want, data)
		}
	}
}

func TestBlockSourceStopsOnNoProgress(t *testing.T) {
	src := blockSource{r: &chunkReader{data: []byte("x"), sizes: []int{0}}, maxLine: 10}
	if _, err := src.fill(nil, 5); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", err)
	}
}
