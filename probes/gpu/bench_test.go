package gpu

import (
	"bytes"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"io"
	"os"
	"testing"
)

// BenchmarkParseRow parses one row of flightdeck's 24-field query.
func BenchmarkParseRow(b *testing.B) {
	p := mustParser(b, DefaultFields())
	line := []byte(h200Row(3))
	var g event.GPU
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.ParseInto(&g, line); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseTick8 parses one tick of an 8-GPU host: classify each line
// (failure check first, as the sampler does) and parse it.
func BenchmarkParseTick8(b *testing.B) {
	p := mustParser(b, DefaultFields())
	rows := make([][]byte, 8)
	for i := range rows {
		rows[i] = []byte(h200Row(i))
	}
	var g event.GPU
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range rows {
			if _, ok := ClassifyFailure(r); ok {
				b.Fatal("classified a row as failure")
			}
			if err := p.ParseInto(&g, r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkWriteJSONLCapture converts the 212-column load CSV of the H200
// capture (what `flightdeck parse gpu` does per row).
func BenchmarkWriteJSONLCapture(b *testing.B) {
	capture, err := os.ReadFile("testdata/nvidia-smi/captures/linux-x86_64__nvidia-h200__590.48.01.txt")
	if err != nil {
		b.Fatal(err)
	}
	header, rows := csvOf(captureSection(b, capture, "load :: query-gpu"))
	in := []byte(header + "\n" + rows[0] + "\n")
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteJSONL(io.Discard, bytes.NewReader(in), nil); err != nil {
			b.Fatal(err)
		}
	}
}
