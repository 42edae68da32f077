package main

import (
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/journal/journaltest"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// demoDay is journaltest.DemoDayFile: a 24 h journal of the demo's workload.
var demoDay = journaltest.DemoDayFile

// BenchmarkJournalShow is `flightdeck journal show` of a 24 h journal of
// the demo's workload: open, read the report, print the summary.
func BenchmarkJournalShow(b *testing.B) {
	path, err := demoDay()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir() // no earlier journals
	for b.Loop() {
		lj, err := loadJournal(path)
		if err != nil {
			b.Fatal(err)
		}
		withEarlier(lj, dir, io.Discard)
		if err := showSession(io.Discard, lj, dir); err != nil {
			b.Fatal(err)
		}
		lj.Close()
	}
}

// TestReportReadsLight: the report `journal show` reads without decoding
// GPU samples (Journal.ScanLight) is the one every event gives, a crash
// (another session appending) after a sample included.
func TestReportReadsLight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.jsonl")
	w, err := journal.Create(path, event.SessionHeader{Created: journaltest.DemoStart, Host: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(e event.Event) {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	journaltest.DemoEvents(20*time.Minute, write)
	// The last event is a sample, and the next session's header comes
	// after it: the open experiment ends at that sample (a crash).
	at := journaltest.DemoStart.Add(20*time.Minute + 30*time.Second)
	write(event.Event{At: at, Data: event.GPUSample{At: at, GPUs: []event.GPU{{Index: 0}}}})
	write(event.Event{At: at.Add(time.Minute), Data: event.Session{SessionHeader: event.SessionHeader{Created: at.Add(time.Minute), Host: "demo"}}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	full, err := report.ReadReport(j.Header(), j.Scan, false)
	if err != nil {
		t.Fatal(err)
	}
	light, err := report.ReadReport(j.Header(), j.ScanLight, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, light) {
		t.Errorf("reports differ:\nfull  %+v\nlight %+v", full, light)
	}
	if n := len(full.Rates); n < 2000 || full.Ledger.Find("e1") == nil {
		t.Errorf("report of %d rates, experiments %v", n, full.Ledger.Experiments())
	}
}
