package journal

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

var update = flag.Bool("update", false, "rewrite testdata/recorded.jsonl")

// recordedFixture is testdata/recorded.jsonl: a journal this package wrote
// with every kind in it. It pins the format: a change to an encoding shows
// as a diff here (and needs a version bump unless old files still read the
// same).
const recordedFixture = "testdata/recorded.jsonl"

func TestRecordedFixture(t *testing.T) {
	evs := append(roundTripEvents(), sessionEvents()...)
	path := writeJournal(t, evs)
	got, _ := os.ReadFile(path)
	if *update {
		if err := os.WriteFile(recordedFixture, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(recordedFixture)
	if err != nil {
		t.Fatalf("%v (run go test ./journal -run TestRecordedFixture -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the writer's output differs from %s: the format changed", recordedFixture)
	}
	back := readAll(t, recordedFixture)
	if len(back) != len(evs) {
		t.Fatalf("%d events read, %d written", len(back), len(evs))
	}
	for i := range evs {
		if d := diffPayload(evs[i].Data, back[i].Data); d != "" {
			t.Errorf("event %d: %s", i, d)
		}
	}
}

// FuzzOpen feeds Open whole files: the recorded fixture cut, garbled and
// spliced. Open, decoding every event, Events, CatchUp and Marks must
// never panic, whatever the bytes.
func FuzzOpen(f *testing.F) {
	rec, err := os.ReadFile(recordedFixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	lines := bytes.SplitAfter(rec, []byte{'\n'})
	head := lines[0]
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		f.Add(append(append([]byte{}, head...), l...))
		f.Add(append(append([]byte{}, head...), l[:len(l)/2]...))
		g := bytes.Clone(l)
		if len(g) > 10 {
			g[len(g)/3] ^= 0x55
		}
		f.Add(append(append([]byte{}, head...), g...))
	}
	f.Add(rec[:len(rec)/2])
	f.Add([]byte(`{"format":"flightdeck-journal","version":1,"created":"2026-11-29T00:00:00Z"}` + "\n" + `[1,"gpu-sample",[0,[0,8,97]]]` + "\n"))
	f.Add([]byte(`{"format":"flightdeck-journal","version":1,"created":"2026-11-29T00:00:00Z"}` + "\n" + `[1,"log-lines",["p",0,{"o":-5,"b":"////"},{"t":1}]]` + "\n"))
	f.Add([]byte(`{"format":"flightdeck-journal","version":1,"created":"2026-11-29T00:00:00Z"}` + "\n" + `[1e308,"note",{}]` + "\n" + `[-1e15,"tok-rate",[1,2,3,4,5]]` + "\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := Open(path)
		if err != nil {
			return
		}
		defer j.Close()
		n := 0
		j.Scan(func(event.Event) error { n++; return nil })
		if n+j.Problems().Undecodable < j.Len() {
			t.Errorf("scan gave %d events and %d undecodable of %d", n, j.Problems().Undecodable, j.Len())
		}
		d := j.Duration()
		for _, at := range []time.Duration{-time.Second, 0, d / 2, d, d + time.Second} {
			j.Events(at-time.Second, at)
			j.CatchUp(at)
		}
		j.Marks()
		_ = j.Problems().String()
		j.Refresh()
	})
}
