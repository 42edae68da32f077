package journal

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
)

// sessionEvents is a short session with two ended experiments and a note
// as its last event.
func sessionEvents() []event.Event {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var evs []event.Event
	add := func(s float64, p event.Payload) { evs = append(evs, event.Event{At: at(s), Data: p}) }
	for i := range 6 {
		s := float64(i) * 0.5
		add(s, testSample(at(s), i, 2))
		add(s+0.1, event.TokRate{TokPerSec: 1000 + float64(i), Ranks: 1})
	}
	add(3, event.ExperimentStart{ID: "e1", Name: "baseline", Trigger: "key"})
	add(4, event.TokRate{TokPerSec: 89, Ranks: 1})
	add(5, event.ExperimentEnd{Exp: "e1", Trigger: "key", Conclusion: "fast", Result: event.ExperimentResult{Metric: "tok/s", Median: 89, N: 1, Samples: []float64{89}}})
	add(6, event.ExperimentStart{ID: "e2", Name: "ring", Trigger: "key"})
	add(7, event.ExperimentEnd{Exp: "e2", Trigger: "key", Result: event.ExperimentResult{Metric: "tok/s"}})
	add(8, event.Note{Text: "the last line"})
	return evs
}

func TestTornTailAtEveryByte(t *testing.T) {
	evs := sessionEvents()
	path := writeJournal(t, evs)
	full, _ := os.ReadFile(path)
	lastStart := bytes.LastIndexByte(full[:len(full)-1], '\n') + 1
	for cut := lastStart; cut <= len(full); cut++ {
		if err := os.WriteFile(path, full[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := Open(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want := len(evs) - 1
		if cut == len(full) {
			want = len(evs)
		}
		if j.Len() != want {
			t.Errorf("cut at %d: %d events, want %d", cut, j.Len(), want)
		}
		p := j.Problems()
		if torn := cut > lastStart && cut < len(full); p.Torn != torn || (torn && p.TornBytes != cut-lastStart) || p.Garbled != 0 {
			t.Errorf("cut at %d: problems %+v", cut, p)
		}
		var l ledger.Ledger
		if err := j.Scan(func(e event.Event) error { l.Apply(e); return nil }); err != nil {
			t.Fatal(err)
		}
		exps := l.Experiments()
		if len(exps) != 2 || exps[0].Open() || exps[1].Open() || exps[0].Result.Median != 89 || exps[0].Conclusion != "fast" {
			t.Errorf("cut at %d: experiments %+v", cut, exps)
		}
		if m := j.Marks(); len(m) != 4+(want-len(evs)+1) {
			t.Errorf("cut at %d: %d marks", cut, len(m))
		}
		j.Close()
	}
}

func TestGarbledAndUnknownLines(t *testing.T) {
	evs := sessionEvents()
	path := writeJournal(t, evs)
	full, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(full), "\n")
	// lines[0] header; lines[1] the first gpu-sample (a keyframe).
	var b strings.Builder
	b.WriteString(lines[0])
	b.WriteString("\n")                                     // blank: line 2
	b.WriteString(lines[1][:len(lines[1])/2] + "\n")        // a disk that filled mid-line: 3
	b.WriteString(`[1.2,"gpu-power",{"w":[1,2,3]}]` + "\n") // a newer kind: 4
	b.WriteString(`[1.3,"gpu-power",7]` + "\n")             // 5
	b.WriteString("\x00\x00\x00\x00garbage\n")              // bit rot: 6
	b.WriteString(`[1.4,"tok-rate",["x"]]` + "\n")          // valid JSON, bad data: 7
	b.WriteString(`[1.5,"note",{"text":"ok"}` + "\n")       // no closing bracket: 8
	b.WriteString(`[1.6,"tok-rate",[5,1]]` + "\r\n")        // CRLF is fine: 9
	for _, l := range lines[2:] {
		b.WriteString(l)
	}
	os.WriteFile(path, []byte(b.String()), 0o600)
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	p := j.Problems()
	if p.Garbled != 3 || p.FirstGarbled != 3 || p.Unknown != 2 || len(p.UnknownKinds) != 1 || p.UnknownKinds[0] != "gpu-power" || p.Blank != 1 || p.Torn {
		t.Errorf("problems %+v", p)
	}
	var n int
	var samples int
	j.Scan(func(e event.Event) error {
		n++
		if e.Data.Kind() == event.KindGPUSample {
			samples++
		}
		return nil
	})
	// The damaged keyframe loses itself; its deltas (the next samples in
	// the same minute) cannot be decoded and are skipped, not guessed.
	if samples != 0 {
		t.Errorf("%d samples decoded without their keyframe", samples)
	}
	if p := j.Problems(); p.Undecodable != 1+5 {
		t.Errorf("undecodable %d, want 6 (a bad tok-rate and 5 deltas)", p.Undecodable)
	}
	if want := len(evs) - 6 + 1; n != want {
		t.Errorf("%d events, want %d", n, want)
	}
	if !strings.Contains(p.String(), "3 garbled line(s) (first: line 3)") {
		t.Errorf("summary %q", p.String())
	}
}

// A complete last line ("\n"-terminated) that is not an event is garbled,
// not torn: only a line cut short (no "\n") is torn.
func TestGarbledLastCompleteLineIsGarbled(t *testing.T) {
	for _, last := range []string{"[9,\"note\",{\"te\n", "null\n"} {
		path := writeJournal(t, sessionEvents())
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(last)
		f.Close()
		j, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := len(sessionEvents()) + 2
		if p := j.Problems(); p.Torn || p.Garbled != 1 || p.FirstGarbled != lines {
			t.Errorf("%q: problems %+v, want 1 garbled line (line %d), not torn", last, p, lines)
		}
		f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("[10,\"note\",{\"text\":\"x\"}]\n[11,\"note\"")
		f.Close()
		if n, err := j.Refresh(); n != 1 || err != nil {
			t.Fatalf("refresh: %d, %v", n, err)
		}
		if p := j.Problems(); !p.Torn || p.Garbled != 1 {
			t.Errorf("%q: after a line and a fragment follow it: %+v", last, p)
		}
		j.Close()
	}
}

func TestRefreshGrowingFile(t *testing.T) {
	path, w := createJournal(t)
	defer w.Close()
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Len() != 0 || j.Duration() != 0 {
		t.Fatalf("empty journal: %d events", j.Len())
	}
	evs := sessionEvents()
	total := 0
	for i, e := range evs {
		w.Write(e)
		if i%3 != 2 {
			continue
		}
		w.Flush(false)
		// Half a line more: the follower must wait for the rest.
		n, err := j.Refresh()
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if total != i+1 || j.Len() != i+1 {
			t.Errorf("after %d events: refresh gave %d in all, len %d", i+1, total, j.Len())
		}
	}
	// A torn tail that completes later.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`[20,"note",{"te`)
	if n, _ := j.Refresh(); n != 0 || !j.Problems().Torn {
		t.Errorf("half a line: %d events, %+v", n, j.Problems())
	}
	f.WriteString(`xt":"done"}]` + "\n")
	f.Close()
	if n, _ := j.Refresh(); n != 1 || j.Problems().Torn {
		t.Errorf("completed line: %d events, %+v", n, j.Problems())
	}
	if j.Duration() != 20*time.Second {
		t.Errorf("duration %v", j.Duration())
	}
	got, err := j.Events(19*time.Second, 20*time.Second)
	if err != nil || len(got) != 1 || got[0].Data.(event.Note).Text != "done" {
		t.Errorf("last event %v %v", got, err)
	}
}

func TestEventsRunningMax(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var evs []event.Event
	for _, s := range []float64{1, 2, 1.5, 3, 2.5, 4} { // live events arrive slightly out of order
		evs = append(evs, event.Event{At: at(s), Data: event.Note{Text: strconv.FormatFloat(s, 'f', -1, 64)}})
	}
	j, err := Open(writeJournal(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	texts := func(from, to time.Duration) string {
		got, _ := j.Events(from, to)
		var s []string
		for _, e := range got {
			s = append(s, e.Data.(event.Note).Text)
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		from, to time.Duration
		want     string
	}{
		{0, 2 * time.Second, "1 2 1.5"},
		{2 * time.Second, 3 * time.Second, "3 2.5"},
		{-time.Hour, time.Hour, "1 2 1.5 3 2.5 4"},
		{time.Second, time.Second, ""},
		{time.Second - time.Nanosecond, time.Second, "1"},
		{3 * time.Second, 10 * time.Second, "4"},
	} {
		if got := texts(c.from, c.to); got != c.want {
			t.Errorf("Events(%v, %v) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
	if j.Duration() != 4*time.Second {
		t.Errorf("duration %v", j.Duration())
	}
}

func TestMarks(t *testing.T) {
	j, err := Open(writeJournal(t, sessionEvents()))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	got := fmt.Sprint(j.Marks())
	want := "[{3s exp-start e1 baseline} {5s exp-end e1 fast} {6s exp-start e2 ring} {7s exp-end e2 key} {8s note  the last line}]"
	if got != want {
		t.Errorf("marks %s\nwant  %s", got, want)
	}
}

// The kill -9 test: a child process writes a journal in a loop (flushing
// like the recorder), the parent kills it with SIGKILL mid-stream.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	path := filepath.Join(t.TempDir(), "k.jsonl")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$")
	cmd.Env = append(os.Environ(), "FLIGHTDECK_JOURNAL_CHILD="+path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it has written a good part, then kill it mid-stream.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := os.Stat(path)
		if err == nil && st.Size() > 200_000 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("child wrote too little: %s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	j, err := Open(path)
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	defer j.Close()
	p := j.Problems()
	if p.Garbled != 0 || p.Unknown != 0 {
		t.Errorf("problems after kill -9: %+v", p)
	}
	var l ledger.Ledger
	n := 0
	j.Scan(func(e event.Event) error { l.Apply(e); n++; return nil })
	if n == 0 || j.Problems().Undecodable != 0 {
		t.Fatalf("%d events, %+v", n, j.Problems())
	}
	exps := l.Experiments()
	for i, e := range exps {
		if e.Open() && i != len(exps)-1 {
			t.Errorf("experiment %s not ended", e.ID)
		}
	}
	ended := 0
	for _, e := range l.Experiments() {
		if !e.Open() {
			ended++
		}
	}
	if ended == 0 {
		t.Errorf("no experiment ended before the kill")
	}
	// The stale lock file is taken over.
	w, err := Append(path, event.SessionHeader{})
	if err != nil {
		t.Fatalf("append after kill -9: %v", err)
	}
	w.Close()
}

func TestKill9Child(t *testing.T) {
	path := os.Getenv("FLIGHTDECK_JOURNAL_CHILD")
	if path == "" {
		t.Skip("the child of TestKill9")
	}
	w, err := Create(path, event.SessionHeader{Created: t0})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		at := t0.Add(time.Duration(i) * 500 * time.Millisecond)
		w.Write(event.Event{At: at, Data: testSample(at, i, 8)})
		w.Write(event.Event{At: at, Data: event.TokRate{TokPerSec: 1000, Ranks: 1}})
		if i%20 == 0 {
			id := "e" + strconv.Itoa(i/20)
			w.Write(event.Event{At: at, Data: event.ExperimentStart{ID: id, Name: id, Trigger: "key"}})
		}
		if i%20 == 19 {
			w.Write(event.Event{At: at, Data: event.ExperimentEnd{Exp: "e" + strconv.Itoa(i/20), Trigger: "key"}})
			w.Flush(true)
		}
		if i%3 == 0 {
			w.Flush(false)
		}
	}
}

// ScanKinds decodes the events of the kinds asked for, in file order, and
// nothing else.
func TestScanKinds(t *testing.T) {
	evs := roundTripEvents()
	j, err := Open(writeJournal(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var want []event.Event
	for _, e := range evs {
		switch e.Data.(type) {
		case event.HostState, event.ExperimentFingerprint:
			want = append(want, e)
		}
	}
	var got []event.Event
	if err := j.ScanKinds(func(e event.Event) error { got = append(got, e); return nil },
		event.KindHostState, event.KindExperimentFingerprint, event.KindGPUSample); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(want) < 2 {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffPayload(want[i].Data, got[i].Data); d != "" {
			t.Errorf("event %d: %s", i, d)
		}
	}
}
