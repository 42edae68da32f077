package report

import (
	"fmt"
	"io"
	"testing"

	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// BenchmarkCompare is one compare view's model over a long session: 120
// experiments (4 configurations × 30 launches), each with 7 tok/s samples
// and a benchmark run, A and B with their launches, every fingerprint
// row, the A/A noise of every configuration. The cockpit builds it when c
// is pressed; journal diff builds it once.
func BenchmarkCompare(b *testing.B) {
	heads := []string{"a6d51c005def07f605f0dd44ce0da458e97c7d62", "65b09bf1c3b0a7d8e6f5a4b3c2d1e0f9a8b7c6d5"}
	var exps []ledger.Experiment
	for i := range 120 {
		profile := []string{"baseline", "nccl-ll-ring"}[i%2]
		head := heads[(i/2)%2]
		x := ledgertest.WithBench(ledgertest.Experiment(fmt.Sprintf("e%d", i+1), profile, head, 62.5+float64(i%4)*9), 60, 50)
		exps = append(exps, x)
	}
	b.ReportAllocs()
	for b.Loop() {
		d, err := compare.Compare(exps, "e1", "e4")
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteDiffText(io.Discard, d, DiffOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
