package journaltest

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// TestV2ReadsAsV1: a recorded session (40 minutes of the demo's
// workload, an idle pause and a log reset included) written in format v2
// and in format v1 (a writer appending to a version 1 journal keeps its
// layouts) reads back as the same events, in the same order, by every
// reading path: Scan, Events over windows, ScanKinds and CatchUp.
func TestV2ReadsAsV1(t *testing.T) {
	var evs []event.Event
	DemoEvents(40*time.Minute, func(e event.Event) { evs = append(evs, e) })
	// A log reset and a new file mid-way, a line that is not UTF-8, a
	// gap in the offsets: what the follower also sends.
	mid := len(evs) / 2
	at := evs[mid].At
	extra := []event.Event{
		{At: at, Data: event.LogReset{Path: DemoLogPath, Reason: "truncated", Offset: 0}},
		{At: at, Data: event.LogLines{Path: DemoLogPath + ".1", Lines: []event.LogLine{{Offset: 0, Text: []byte("\xff\xfe not utf-8 [2026-12-01 08:00:01]")}, {Offset: 90, Text: []byte("after a gap 1")}}}},
	}
	evs = append(evs[:mid], append(extra, evs[mid:]...)...)
	dir := t.TempDir()
	v2 := filepath.Join(dir, "v2.jsonl")
	h := event.SessionHeader{Created: DemoStart, Host: "demo"}
	write := func(w *journal.Writer) {
		for _, e := range evs {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	w, err := journal.Create(v2, h)
	if err != nil {
		t.Fatal(err)
	}
	write(w)
	v1 := filepath.Join(dir, "v1.jsonl")
	if err := os.WriteFile(v1, []byte(`{"format":"flightdeck-journal","version":1,"created":"2026-12-01T08:00:00Z","flightdeck":"v1","host":"demo"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w, err = journal.Append(v1, h); err != nil {
		t.Fatal(err)
	}
	write(w)

	read := func(path string, skip int) (*journal.Journal, []event.Event) {
		j, err := journal.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		var out []event.Event
		if err := j.Scan(func(e event.Event) error { out = append(out, e); return nil }); err != nil {
			t.Fatal(err)
		}
		if p := j.Problems(); p.Any() {
			t.Errorf("%s: %s", path, p)
		}
		return j, out[skip:]
	}
	j2, got := read(v2, 0)
	j1, want := read(v1, 1) // the session event Append wrote
	same := func(what string, got, want []event.Event) {
		t.Helper()
		if len(got) != len(want) {
			for i := range max(len(got), len(want)) {
				var a, b string
				if i < len(got) {
					a = got[i].Data.Kind().String()
				}
				if i < len(want) {
					b = want[i].Data.Kind().String()
				}
				if a != b {
					t.Logf("first difference at %d: %s in v2, %s in v1", i, a, b)
					break
				}
			}
			t.Fatalf("%s: %d events in v2, %d in v1", what, len(got), len(want))
		}
		for i := range got {
			if !got[i].At.Equal(want[i].At) || !reflect.DeepEqual(got[i].Data, want[i].Data) {
				t.Fatalf("%s: event %d differs:\nv2 %s %+v\nv1 %s %+v", what, i, got[i].At, got[i].Data, want[i].At, want[i].Data)
			}
		}
	}
	same("Scan", got, want)
	if len(got) != len(evs) {
		t.Errorf("%d events read, %d written", len(got), len(evs))
	}
	kinds := map[event.Kind]int{}
	for _, e := range got {
		kinds[e.Data.Kind()]++
	}
	if kinds[event.KindThroughput] < 4000 || kinds[event.KindTokRate] < 4000 || kinds[event.KindPrefill] < 50 || kinds[event.KindLogReset] != 1 {
		t.Errorf("kinds read: %v", kinds)
	}
	st2, _ := os.Stat(v2)
	st1, _ := os.Stat(v1)
	if st2.Size()*2 > st1.Size() {
		t.Errorf("v2 %d bytes, v1 %d: want under half", st2.Size(), st1.Size())
	}
	// Windows starting anywhere (mid-chain: the state is rebuilt from its
	// key line).
	for _, w := range [][2]time.Duration{{0, time.Minute}, {90 * time.Second, 95 * time.Second}, {20*time.Minute + 333*time.Millisecond, 21 * time.Minute}, {39 * time.Minute, time.Hour}} {
		a, _ := j2.Events(w[0], w[1])
		b, _ := j1.Events(w[0], w[1])
		same("Events", a, b) // Append's session event is at 0: outside (from, to]
	}
	for _, k := range []event.Kind{event.KindThroughput, event.KindTokRate, event.KindPrefill, event.KindLogLines} {
		var a, b []event.Event
		j2.ScanKinds(func(e event.Event) error { a = append(a, e); return nil }, k)
		j1.ScanKinds(func(e event.Event) error { b = append(b, e); return nil }, k)
		same("ScanKinds "+k.String(), a, b)
	}
	for _, at := range []time.Duration{30 * time.Second, 17*time.Minute + 250*time.Millisecond, 39 * time.Minute} {
		a, err := j2.CatchUp(at)
		if err != nil {
			t.Fatal(err)
		}
		b, err := j1.CatchUp(at)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[0].Data.Kind() == event.KindSession {
			b = b[1:] // Append's
		}
		same("CatchUp", a, b)
	}
}
