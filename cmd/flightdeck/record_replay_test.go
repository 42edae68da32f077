package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/replay"
)

// The screen size of the record/replay comparison; the replay gets one
// more line for its timeline.
const rrWidth, rrHeight = 120, 40

// liveCapture is the live cockpit's screen right after one event.
type liveCapture struct {
	pos  time.Duration // the event's time since the journal's start
	kind string        // the event's kind, for failure messages
	view string
}

// liveScreen is a cockpit model fed the stream as the real one is (one
// event at a time, in order), with its screen captured after chosen
// events.
type liveScreen struct {
	m       *tui.Model
	created time.Time

	mu       sync.Mutex
	seen     []event.Event
	captures []liveCapture
	maxAt    time.Time
	pending  *liveCapture // taken after the last event; kept if the next one is later
	n        int
}

// interesting says after which events the screen is captured: experiment
// boundaries, fingerprints, notes, server states, and every 25th event.
func (s *liveScreen) interesting(e event.Event) bool {
	switch e.Data.(type) {
	case event.ExperimentStart, event.ExperimentFingerprint, event.ExperimentEnd, event.Note, event.ServerStatus, event.ServerLaunched:
		return true
	}
	return s.n%25 == 0
}

func (s *liveScreen) run(events <-chan event.Event, done chan<- struct{}) {
	defer close(done)
	for e := range events {
		if _, isStatus := e.Data.(event.JournalStatus); isStatus {
			// The recorder's own state: screen-only, never in the journal
			// a replay reads.
			continue
		}
		s.mu.Lock()
		s.n++
		// A capture at T holds only if nothing later in the stream has a
		// time ≤ T (the journal gives every event up to T to the replay):
		// keep it when the next event is at least a millisecond later.
		if s.pending != nil && e.At.Sub(s.created) > s.pending.pos+time.Millisecond {
			s.captures = append(s.captures, *s.pending)
		}
		s.pending = nil
		s.m.Update(tui.EventsMsg{e})
		if x, ok := e.Data.(event.ExperimentEnd); ok && x.Conclusion == "" && x.Trigger != event.TriggerKey {
			// The live cockpit asks for the conclusion of an experiment
			// that ended by itself (an overlay, which a replay never
			// opens): the user skips it.
			s.m.Update(tea.KeyPressMsg{Code: tea.KeyEscape})
		}
		s.seen = append(s.seen, e)
		newMax := !e.At.Before(s.maxAt)
		if newMax {
			s.maxAt = e.At
		}
		if _, isStatus := e.Data.(event.JournalStatus); !isStatus && newMax && s.interesting(e) {
			// The journal keeps times to the microsecond: capture at the
			// event's time rounded up, so that both clocks are past it.
			pos := e.At.Sub(s.created)
			if r := pos % time.Microsecond; r != 0 {
				pos += time.Microsecond - r
			}
			s.m.Update(tui.ClockMsg{Now: s.created.Add(pos)})
			s.pending = &liveCapture{pos: pos, kind: e.Data.Kind().String(), view: s.m.View().Content}
		}
		s.mu.Unlock()
	}
}

// waitFor polls the events seen until cond holds.
func (s *liveScreen) waitFor(t *testing.T, what string, d time.Duration, cond func([]event.Event) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		ok := cond(s.seen)
		s.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

// readyWithRates: the last server status is ready for a launch with
// profile, and n tok/s samples arrived after it.
func readyWithRates(profile string, n int) func([]event.Event) bool {
	return func(es []event.Event) bool {
		count, ready := 0, false
		for _, e := range es {
			switch p := e.Data.(type) {
			case event.ServerStatus:
				ready = p.Phase == event.PhaseReady && p.Profile == profile
				count = 0
			case event.TokRate:
				if ready && !p.Dropped {
					count++
				}
			}
		}
		return ready && count >= n
	}
}

// waitResult waits until the open experiment has n steady-state samples
// (the warm-up is the first 10 s after ready).
func waitResult(t *testing.T, s *sessions.Session, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.Provisional().N < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d steady-state samples after a minute: %+v", n, s.Provisional())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hasKind(kind string, n int) func([]event.Event) bool {
	return func(es []event.Event) bool {
		c := 0
		for _, e := range es {
			if e.Data.Kind().String() == kind {
				c++
			}
		}
		return c >= n
	}
}

// TestRecordAndReplaySession records a scripted session against the
// simulated host — the first launch, ready and tok/s, a note, a relaunch
// with the nccl-ll-ring profile, ready and tok/s, the experiment ended by
// hand — through a sessions.Session (its probes, Control, Git, Lab and
// recorder on one stream) and a live cockpit model fed the same stream. Then it replays the journal and,
// at every captured time, seeks the replay there: the cockpit's screen is
// the live one, line for line (the replay's timeline line aside).
func TestRecordAndReplaySession(t *testing.T) {
	if testing.Short() {
		t.Skip("records a session against the simulated host (about 40 s)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h, err := sim.Start(ctx, sim.Options{TimeScale: 4, StartupDelay: time.Second, Seed: 21})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull, IdentityFiles: []string{h.IdentityPath},
		KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	cfg := config.Builtins()

	path := filepath.Join(t.TempDir(), "journals", "demo", "session.jsonl")
	ss, err := sessions.Open(sessions.Options{Name: "demo", Config: cfg, Journal: sessions.JournalOptions{File: path}, Version: "test",
		Header: event.SessionHeader{Host: "simulated host", Label: "demo"}})
	if err != nil {
		t.Fatal(err)
	}
	screenEvents := ss.Subscribe(context.Background(), 1<<16)
	if err := ss.Attach(ctx, sessions.AttachOptions{Host: host, Target: siteOf(h, demoFlags{gpus: 8, profile: "none"}).config(), Repo: h.RepoPath,
		NoProcessMatch: true, Grace: time.Second, GPUTimeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if j, err := journal.Open(path); err == nil {
		created = j.Header().Created
		j.Close()
	}
	live := &liveScreen{created: created, m: tui.New(tui.Options{Label: "demo", Host: "simulated host", NoColor: true, Control: ss, Git: ss, Experiments: ss})}
	live.m.Update(tea.WindowSizeMsg{Width: rrWidth, Height: rrHeight})
	screenDone := make(chan struct{})
	go live.run(screenEvents, screenDone)
	ss.Start(ctx, func(ctx context.Context) error {
		return ss.Run(ctx, sessions.LiveConfig{Interval: 250 * time.Millisecond, Server: "sglang"})
	})

	// The script. The first launch waits for the GPUs to be seen, so that
	// the fingerprint holds them (the Lab takes the latest sample).
	live.waitFor(t, "a GPU sample", time.Minute, hasKind("gpu-sample", 1))
	plan, err := ss.Plan(ss.Request())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Launch(ctx, plan); err != nil {
		t.Fatal(err)
	}
	live.waitFor(t, "e1 ready with tok/s", 2*time.Minute, readyWithRates("none", 4))
	waitResult(t, ss, 4)
	live.waitFor(t, "e1's fingerprint", time.Minute, hasKind("exp-fingerprint", 1))
	if _, err := ss.Note(ctx, "baseline: flat at 62.5"); err != nil {
		t.Fatal(err)
	}
	req := ss.Request()
	req.Profile = "nccl-ll-ring"
	if plan, err = ss.Plan(req); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Launch(ctx, plan); err != nil {
		t.Fatal(err)
	}
	live.waitFor(t, "e2 ready with tok/s", 2*time.Minute, readyWithRates("nccl-ll-ring", 4))
	waitResult(t, ss, 4)
	live.waitFor(t, "e2's fingerprint", time.Minute, hasKind("exp-fingerprint", 2))
	if _, err := ss.EndExperiment(ctx, "the profile helps"); err != nil {
		t.Fatal(err)
	}
	live.waitFor(t, "e2's end", 10*time.Second, hasKind("exp-end", 2))
	time.Sleep(500 * time.Millisecond) // a few more samples after the end

	// Quit as the cockpit does: the Lab, the probes, then the recorder.
	if err := ss.Close(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-screenDone
	if err := ss.Kill(ctx); err != nil {
		t.Logf("kill the server: %v", err)
	}

	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if p := j.Problems(); p.Any() {
		t.Errorf("the recorded journal has problems: %v", p)
	}
	live.mu.Lock()
	captures, seen := live.captures, len(live.seen)
	live.mu.Unlock()
	if len(captures) < 10 {
		t.Fatalf("only %d screens captured of %d events", len(captures), seen)
	}
	t.Logf("%d events live, %d in the journal, %d screens compared", seen, j.Len(), len(captures))
	for _, cp := range captures {
		// The footer's key hints differ by design (the replay's own keys),
		// the replay has its timeline below, and its header says
		// "replay": the rest is the body, compared with the live one. The
		// header is compared with a read-only model's fed every event.
		got, want := replayBody(t, j, cp.pos), dropLastLines(cp.view, 1)
		gotHead, got, _ := strings.Cut(got, "\n")
		_, want, _ = strings.Cut(want, "\n")
		if fullHead, _, _ := strings.Cut(fullBody(t, j, cp.pos), "\n"); gotHead != fullHead || !strings.HasPrefix(ansi.Strip(gotHead), "flightdeck  replay  ") {
			t.Errorf("at %v the replay's header %q, want %q", cp.pos, gotHead, fullHead)
		}
		if got != want {
			// Say whether the seek (CatchUp) or the journal itself is at
			// fault: a model fed every recorded event up to the time.
			all := "also"
			if _, full, _ := strings.Cut(fullBody(t, j, cp.pos), "\n"); full == want {
				all = "not"
			}
			t.Errorf("at %v (after %s) the replay differs from the live screen (a model fed every recorded event up to then does %s):\n%s",
				cp.pos, cp.kind, all, lineDiff(want, got))
		}
	}

	// The journal commands read the recorded file.
	out, _, err := runCLI(t, nil, "journal", "show", path)
	if err != nil || !strings.Contains(out, "e1  none @ a6d51c0") || !strings.Contains(out, "e2  ") || !strings.Contains(out, "baseline: flat at 62.5") {
		t.Errorf("journal show: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, nil, "journal", "export", path, "--format", "csv")
	rows, cerr := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || cerr != nil || len(rows) < 8 {
		t.Errorf("csv export: %v %v, %d rows", err, cerr, len(rows))
	}
	out, _, err = runCLI(t, nil, "journal", "export", path, "--format", "json")
	var doc report.JSONReport
	if err != nil || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Experiments) != 2 {
		t.Fatalf("json export: %v\n%s", err, out)
	}
	e1, e2 := doc.Experiments[0], doc.Experiments[1]
	if e2.EndedHow != "key" || e2.Conclusion != "the profile helps" || e1.Profile != "none" || e2.Profile != "nccl-ll-ring" || e1.Fingerprint == nil ||
		e1.Fingerprint.Git == nil || e1.Fingerprint.Git.Head != h.Commits.Baseline || len(e1.Fingerprint.GPUs) != 8 {
		var head string
		var gpus int
		if e1.Fingerprint != nil && e1.Fingerprint.Git != nil {
			head, gpus = e1.Fingerprint.Git.Head, len(e1.Fingerprint.GPUs)
		}
		t.Errorf("e1 %s profile %q head %s (want %s) %d GPUs; e2 %s profile %q ended %s conclusion %q",
			e1.Name, e1.Profile, head, h.Commits.Baseline, gpus, e2.Name, e2.Profile, e2.EndedHow, e2.Conclusion)
	}
	for i, want := range []float64{sim.ModelTokPerSec(false, false, false), sim.ModelTokPerSec(true, false, false)} {
		if res := doc.Experiments[i].Result; res.N < 4 || res.Median < want*0.9 || res.Median > want*1.1 {
			t.Errorf("e%d: %s, want about %.1f tok/s", i+1, report.FormatResult(res), want)
		}
	}
	md, _, err := runCLI(t, nil, "journal", "export", path, "--format", "md")
	if err != nil || !strings.Contains(md, "profile none -> nccl-ll-ring") {
		t.Errorf("md export: %v\n%s", err, md)
	}
}

// dropLastLines returns s without its last n lines.
func dropLastLines(s string, n int) string {
	for ; n > 0; n-- {
		i := strings.LastIndex(s, "\n")
		if i < 0 {
			return ""
		}
		s = s[:i]
	}
	return s
}

// replayBody seeks a fresh replay of j to pos and returns its screen
// without the footer and the timeline line.
func replayBody(t *testing.T, j *journal.Journal, pos time.Duration) string {
	t.Helper()
	r := replay.New(j, tui.Options{NoColor: true}, replay.Options{At: pos})
	r.Update(tea.WindowSizeMsg{Width: rrWidth, Height: rrHeight + 1})
	runCmds(r, r.Init())
	if r.Position() != pos {
		t.Fatalf("replay at %v, want %v", r.Position(), pos)
	}
	v := r.View().Content
	if n := strings.Count(v, "\n"); n != rrHeight {
		t.Fatalf("replay screen has %d lines, want %d:\n%s", n+1, rrHeight+1, v)
	}
	return dropLastLines(v, 2)
}

// fullBody is the screen, without the footer, of a read-only model fed
// every event of j up to pos, then the clock at pos.
func fullBody(t *testing.T, j *journal.Journal, pos time.Duration) string {
	t.Helper()
	h := j.Header()
	m := tui.New(tui.Options{Label: h.Label, Host: h.Host, LogPath: h.LogPath, NoLog: h.NoLog, ReadOnly: true, NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: rrWidth, Height: rrHeight})
	evs, err := j.Events(math.MinInt64, pos) // events observed before the file was created too (t < 0)
	if err != nil {
		t.Fatal(err)
	}
	m.Update(tui.EventsMsg(evs))
	m.Update(tui.ClockMsg{Now: j.Start().Add(pos)})
	return dropLastLines(m.View().Content, 1)
}

// runCmds runs cmd and feeds what it returns to m, as the program would
// (batches included), until nothing is left.
func runCmds(m tea.Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg := msg.(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			runCmds(m, c)
		}
	default:
		_, next := m.Update(msg)
		runCmds(m, next)
	}
}

// lineDiff shows the lines that differ.
func lineDiff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			fmt.Fprintf(&out, "line %d\n  live:   %q\n  replay: %q\n", i+1, x, y)
		}
	}
	return out.String()
}
