package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// bisectEvents is a journal's bisect: three commits, two launches at each
// endpoint, one failed launch in between, and the end (when ended).
func bisectEvents(ended bool) []event.Event {
	at := reportStart
	ev := func(p event.Payload) event.Event { at = at.Add(time.Minute); return event.Event{At: at, Data: p} }
	c := func(ch byte, subj string, files ...string) event.BisectCommit {
		id := strings.Repeat(string(ch), 40)
		return event.BisectCommit{ID: id, Short: id[:7], Subject: subj, Author: "Ada", Date: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Files: files, FilesTotal: len(files)}
	}
	cs := []event.BisectCommit{c('a', "base"), c('b', "Tune the scheduler", "python/sched.py"), c('c', "Fix PCG MoE Error", "python/moe.py", "python/pcg.py")}
	es := []event.Event{
		ev(event.BisectStart{ID: "b1", Good: "v1", Bad: "main", Commits: cs, Metric: "tok/s", Launches: 2, MaxLaunches: 10, MaxFailures: 3, Alpha: 0.01}),
		ev(event.BisectLaunch{ID: "b1", Commit: cs[0].ID, Exp: "e1", Value: 100, Took: time.Minute}),
		ev(event.BisectLaunch{ID: "b1", Commit: cs[2].ID, Exp: "e2", Value: 90, Took: time.Minute}),
		ev(event.BisectLaunch{ID: "b1", Commit: cs[0].ID, Exp: "e3", Value: 101, Took: time.Minute}),
		ev(event.BisectLaunch{ID: "b1", Commit: cs[2].ID, Exp: "e4", Value: 91, Took: time.Minute}),
		ev(event.BisectLaunch{ID: "b1", Commit: cs[1].ID, Failed: "oom", Why: "CUDA out of memory", Took: time.Minute}),
	}
	if ended {
		es = append(es, ev(event.BisectEnd{ID: "b1", Outcome: event.BisectCulprit, Culprit: cs[2].ID, Why: "10 % slower at ccccccc", Restored: "main at ccccccc, dirty work restored"}))
	}
	return es
}

// TestBisectReportSections: the Markdown report has a Bisects section
// with the outcome (the first bad commit, its subject, date and files)
// and the evidence table (the tested commits with launches, failures,
// median [CI]); journal show's text says the same; a bisect without an
// end says it can be resumed.
func TestBisectReportSections(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ended bool
	}{{"ended", true}, {"interrupted", false}} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ReadReport(reportHeader(), scanOf(bisectEvents(tt.ended)), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Bisects) != 1 || len(r.Bisects[0].Launches) != 5 || (r.Bisects[0].End != nil) != tt.ended {
				t.Fatalf("bisects %+v", r.Bisects)
			}
			var md, text bytes.Buffer
			if err := WriteMarkdown(&md, r, ReportOptions{}); err != nil {
				t.Fatal(err)
			}
			sec := md.String()
			i := strings.Index(sec, "## Bisects")
			if i < 0 {
				t.Fatalf("no Bisects section in\n%s", sec)
			}
			sec = sec[i:]
			if j := strings.Index(sec[3:], "\n## "); j >= 0 {
				sec = sec[:j+4]
			}
			if err := WriteBisectText(&text, r.Bisects[0]); err != nil {
				t.Fatal(err)
			}
			golden(t, "bisect-"+tt.name+".txt", []byte(sec+"---\n"+text.String()))
		})
	}
}
