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
	// Format v2's log lines: a key, digit-run deltas, derived events
	// (references, a tok/s point, data), a line that is not UTF-8; and the
	// v1 demo fixture.
	v2 := `{"format":"flightdeck-journal","version":2,"created":"2026-11-29T00:00:00Z"}` + "\n" +
		`[0.5,"log-lines",[3,"/l",0,"[2026-12-01 08:00:00 TP0] Decode batch. #running-req: 1, #token: 1169, token usage: 0.00, cuda graph: True, gen throughput (token/s): 76.22, #queue-req: 0, ",[0,[76.22,1]]]]` + "\n" +
		`[1,"log-lines",[2,[8,"1209",11,"88",12,"68"],[0,[88.68,1,1],"throughput",{"t":1,"dp":-1,"e":-1}]]]` + "\n" +
		`[1.5,"log-lines",[0,{"b":"//5iYWQ="},[],{"o":900,"t":"x 1"}]]` + "\n" +
		`[2,"log-lines",[2,"[2026-12-01 08:00:02 TP0] Prefill batch. #new-seq: 1, #new-token: 1129, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ",["prefill",0,"prefill",{"ns":1,"dp":-1}]]]` + "\n"
	f.Add([]byte(v2))
	if demo, err := os.ReadFile("testdata/v1-demo-2026-12-03.jsonl"); err == nil {
		f.Add(demo)
	}
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

// TestV2SeedReads: the v2 seed of FuzzOpen reads as what it says (a
// delta applied to its line, references rebuilt, the undecodable delta
// after a line that is not UTF-8 counted, never misread).
func TestV2SeedReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.jsonl")
	os.WriteFile(path, []byte(`{"format":"flightdeck-journal","version":2,"created":"2026-11-29T00:00:00Z"}`+"\n"+
		`[0.5,"log-lines",[3,"/l",0,"[2026-12-01 08:00:00 TP0] Decode batch. #running-req: 1, #token: 1169, token usage: 0.00, cuda graph: True, gen throughput (token/s): 76.22, #queue-req: 0, ",[0,[76.22,1]]]]`+"\n"+
		`[1,"log-lines",[2,[8,"1209",11,"88",12,"68"],[0,[88.68,1,1]]]]`+"\n"+
		`[1.5,"log-lines",[0,{"b":"//5iYWQ="},[]]]`+"\n"+
		// a newer writer's kind on a log line: skipped and counted, the
		// line and the rest read
		`[2,"log-lines",[3,"/l",500,"x 2",["gpu-power",{"w":1},[5,1]]]]`+"\n"), 0o600)
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var got []event.Event
	j.Scan(func(e event.Event) error { got = append(got, e); return nil })
	if p := j.Problems(); len(got) != 8 || p.Undecodable != 1 || p.Unknown != 1 || p.UnknownKinds[0] != "gpu-power" {
		t.Fatalf("%d events, problems %s", len(got), j.Problems())
	}
	l := got[3].Data.(event.LogLines)
	if want := "[2026-12-01 08:00:00 TP0] Decode batch. #running-req: 1, #token: 1209, token usage: 0.00, cuda graph: True, gen throughput (token/s): 88.68, #queue-req: 0, "; string(l.Lines[0].Text) != want || l.Lines[0].Offset != 157 || l.Path != "/l" {
		t.Errorf("delta line %+v", l)
	}
	if th := got[4].Data.(event.Throughput); th.TokPerSec != 88.68 || th.Tokens != 1209 || th.Stamp != "2026-12-01 08:00:00" {
		t.Errorf("throughput %+v", th)
	}
	if r := got[2].Data.(event.TokRate); r.TokPerSec != 76.22 || got[2].At != got[0].At {
		t.Errorf("tok-rate %+v at %s", r, got[2].At)
	}
	if l, r := got[6].Data.(event.LogLines), got[7].Data.(event.TokRate); string(l.Lines[0].Text) != "x 2" || r.TokPerSec != 5 {
		t.Errorf("after the unknown kind: %+v, %+v", l, r)
	}
	// CatchUp decodes the point from its own item: the same.
	evs, _ := j.CatchUp(time.Minute)
	if last := evs[len(evs)-1]; last.Data != got[7].Data {
		t.Errorf("CatchUp's last event %+v", last)
	}
}
