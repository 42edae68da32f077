package agent

import (
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// BenchmarkDecode decodes an 8-GPU sample line with one process per GPU
// (what an 8×H200 agent sends every tick); samples/s is 1e9/(ns/op).
func BenchmarkDecode(b *testing.B) {
	line := AppendSample(nil, sample8())
	var d Decoder
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := d.Decode(line)
		if err != nil || len(m.Payload.(event.GPUSample).GPUs) != 8 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkEncode encodes the same sample into a reused buffer.
func BenchmarkEncode(b *testing.B) {
	s := sample8()
	buf := AppendSample(nil, s)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSample(buf[:0], s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
