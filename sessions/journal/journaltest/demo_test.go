package journaltest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestDemoDayIsTheDemo: the generator's journal holds what the demo's
// does — samples at 2 Hz, decode lines with their throughput and tok/s
// — and reads back without problems.
func TestDemoDayIsTheDemo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	n, err := DemoDay(path, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if p := j.Problems(); p.Any() {
		t.Errorf("problems: %s", p)
	}
	count := map[event.Kind]int{}
	if err := j.Scan(func(e event.Event) error { count[e.Data.Kind()]++; return nil }); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range count {
		total += c
	}
	if total != n {
		t.Errorf("%d events read, %d recorded", total, n)
	}
	if s := count[event.KindGPUSample]; s < 1190 || s > 1200 {
		t.Errorf("%d samples in 10 min, want 2 Hz", s)
	}
	// 88.7 tok/s, a line per 40 tokens: about 2.2 lines a second, less
	// the idle pauses.
	if th := count[event.KindThroughput]; th < 1000 || th > 1340 {
		t.Errorf("%d throughput events in 10 min", th)
	}
	if r := count[event.KindTokRate]; r < count[event.KindThroughput]-2 {
		t.Errorf("%d tok/s points for %d throughput lines", r, count[event.KindThroughput])
	}
	if count[event.KindPrefill] < 10 || count[event.KindLogLines] < count[event.KindThroughput] {
		t.Errorf("prefill %d, log-lines %d", count[event.KindPrefill], count[event.KindLogLines])
	}
}

// BenchmarkDemoWrite records an hour of the demo's workload through the
// recorder; it reports the file's bytes per hour and per 24 h.
func BenchmarkDemoWrite(b *testing.B) {
	dir := b.TempDir()
	var size int64
	for i := 0; b.Loop(); i++ {
		path := filepath.Join(dir, "h.jsonl")
		os.Remove(path)
		if _, err := DemoDay(path, time.Hour); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
	}
	b.ReportMetric(float64(size), "bytes/hour")
	b.ReportMetric(float64(size)*24/1e6, "MB/24h")
}
