package journal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// Journals written by earlier releases, with what they read as when they
// were written (the .events golden files were made by that release's
// reader): a format change must leave them reading the same.
var compatFixtures = []string{
	// Format version 1 as the recorder of 2026-12-03 wrote it: the
	// first 40 s of `flightdeck demo` (8 simulated H200s, the sim
	// server's log with its decode lines, their throughput and tok/s).
	"testdata/v1-demo-2026-12-03",
	// The v1 writer's recorded fixture: every kind of format v1.
	"testdata/recorded-v1",
}

// describeEvents writes a line per event: its time (UTC), kind and a hash
// of its payload as canonText prints it (what pointers point to, errors by
// their text, fields at their zero value left out: a field added since
// the journal was written reads as zero and changes nothing), so that two
// readings compare as text.
func describeEvents(evs []event.Event) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		sum := sha256.Sum256([]byte(canonText(e.Data)))
		fmt.Fprintf(&b, "%s %s %x\n", e.At.UTC().Format(time.RFC3339Nano), e.Data.Kind(), sum[:12])
	}
	return b.Bytes()
}

func TestOldJournalsReadTheSame(t *testing.T) {
	old := time.Local
	time.Local = time.UTC // payload times print with their zone
	defer func() { time.Local = old }()
	for _, f := range compatFixtures {
		j, err := Open(f + ".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		var evs []event.Event
		if err := j.Scan(func(e event.Event) error { evs = append(evs, e); return nil }); err != nil {
			t.Fatal(err)
		}
		if p := j.Problems(); p.Any() {
			t.Errorf("%s: %s", f, p)
		}
		j.Close()
		got := describeEvents(evs)
		if *update {
			if _, err := os.Stat(f + ".events"); err != nil {
				if err := os.WriteFile(f+".events", got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		want, err := os.ReadFile(f + ".events")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			gl, wl := bytes.Split(got, []byte{'\n'}), bytes.Split(want, []byte{'\n'})
			for i := range min(len(gl), len(wl)) {
				if !bytes.Equal(gl[i], wl[i]) {
					t.Errorf("%s: event %d reads\n%s\nwas\n%s", f, i+1, gl[i], wl[i])
					break
				}
			}
			t.Errorf("%s: %d events read, %d before", f, len(gl)-1, len(wl)-1)
		}
		if len(evs) < 10 {
			t.Errorf("%s: only %d events", f, len(evs))
		}
	}
}
