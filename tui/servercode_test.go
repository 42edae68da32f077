package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// The demo's commits: the good one the server is launched from and the
// pulled HEAD (full ids, as git reads them).
const (
	goodCommit   = "a6d51c0" + "5e1f0c2d3b4a59687766554433221100ffee"
	pulledCommit = "e7b9c70" + "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b"
)

func repoHead(commit, subject string) event.RepoHead {
	return event.RepoHead{Path: "/root/sglang", Commit: commit, Short: commit[:7], Subject: subject, Branch: "main"}
}

// launchAt is a launch from the cockpit with its log (the server's
// status names it), the experiment it starts and that experiment's
// fingerprint at commit (none when commit is "").
func launchAt(d time.Duration, id, log, commit string) []event.Event {
	st := tuitest.ReadyStatus()
	st.LogPath, st.Since, st.LaunchedAt = log, at(d+20*time.Second), at(d)
	evs := []event.Event{
		ev(d, event.ServerLaunched{Record: event.LaunchRecord{PID: 4100, Launch: event.LaunchInfo{Preset: "sim", Profile: "none", LogPath: log, At: at(d)}}}),
		ev(d, event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", LogPath: log, Since: at(d), LaunchedAt: at(d), Exit: -1}),
		ev(d, event.ExperimentStart{ID: id, Name: "none", Trigger: event.TriggerLaunch}),
	}
	if commit != "" {
		evs = append(evs, ev(d+time.Second, event.ExperimentFingerprint{Exp: id, Fingerprint: event.Fingerprint{Git: &event.GitState{Repo: "/root/sglang", Head: commit}}}))
	}
	return append(evs, ev(d+20*time.Second, st))
}

// pulled is a git pull outside the cockpit: the HEAD-moved event and the
// new HEAD.
func pulled(d time.Duration) []event.Event {
	return []event.Event{
		ev(d, event.GitMoved{From: goodCommit, To: pulledCommit, FromShort: "a6d51c0", ToShort: "e7b9c70", FromBranch: "main", ToBranch: "main",
			Action: "pull", Forward: 3, Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py"}, FilesTotal: 1}),
		ev(d, repoHead(pulledCommit, "[CI] Raise the nightly benchmark timeout")),
	}
}

// demoScene is the demo's cockpit at w columns: connected, HEAD at the
// good commit, the server launched from there by this cockpit and ready.
func demoScene(w int, o Options) *Model {
	o.Label = "demo"
	m := newSized(w, 24, o)
	send(m, ev(0, event.ConnState{Host: "root@127.0.0.1:40123", Conn: event.Connected}),
		ev(0, repoHead(goodCommit, "Tune default chunked prefill size for H200")), ev(time.Second, h200s(8)))
	send(m, launchAt(2*time.Second, "e1", "/sim/logs/sim-1.log", goodCommit)...)
	m.Update(ClockMsg{Now: at(90 * time.Second)})
	return m
}

// The mismatch appears when HEAD moves (a pull outside) and clears at the
// next launch; the server's commit is HEAD at the launch, then its
// fingerprint's; what the cockpit did not launch has no commit.
func TestServerCodeAgainstHead(t *testing.T) {
	header := func(m *Model) string { return screenLines(m)[0] }
	const mismatch = "server a6d51c0 != HEAD e7b9c70"

	m := demoScene(200, Options{})
	if h := header(m); !strings.Contains(h, "  HEAD a6d51c0 Tune default") || strings.Contains(h, "server a6d51c0") {
		t.Errorf("launched at HEAD: %q", h)
	}
	send(m, pulled(100*time.Second)...)
	if h := header(m); !strings.Contains(h, mismatch+" [CI] Raise the nightly benchmark timeout") {
		t.Errorf("after the pull: %q", h)
	}
	if !painted(m, m.styles.Warn, mismatch+" [CI] Raise the nightly benchmark timeout") {
		t.Error("the mismatch is not in the warning tone")
	}
	// It stays once the HEAD-moved banner is dismissed.
	press(m, "esc")
	if h := header(m); !strings.Contains(h, mismatch) || m.git.Moved() {
		t.Errorf("after esc: %q (banner %v)", h, m.git.Moved())
	}
	// A kill: no server runs other code.
	send(m, ev(110*time.Second, event.ServerStatus{Phase: event.PhaseKilled, Exit: -1, Since: at(110 * time.Second)}))
	if h := header(m); strings.Contains(h, "server a6d51c0") || !strings.Contains(h, "HEAD e7b9c70") {
		t.Errorf("killed: %q", h)
	}
	// The next launch runs HEAD: equal again.
	send(m, launchAt(120*time.Second, "e2", "/sim/logs/sim-2.log", pulledCommit)...)
	if h := header(m); strings.Contains(h, "server ") || !strings.Contains(h, "  HEAD e7b9c70 [CI] Raise") {
		t.Errorf("relaunched: %q", h)
	}

	// Launched before HEAD was read: the first HEAD read is the launch's;
	// the fingerprint, when it comes, has the last word.
	p := newSized(200, 24, Options{})
	send(p, launchAt(time.Second, "e1", "/l/1.log", "")...)
	send(p, ev(3*time.Second, repoHead(goodCommit, "good")))
	send(p, pulled(10*time.Second)...)
	if h := header(p); !strings.Contains(h, mismatch) {
		t.Errorf("launched before HEAD was known: %q", h)
	}
	send(p, ev(11*time.Second, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: pulledCommit}}}))
	if h := header(p); strings.Contains(h, "server ") {
		t.Errorf("the fingerprint says the launch ran e7b9c70: %q", h)
	}
	// A fingerprint of an experiment started by hand says nothing of the
	// server's code.
	send(p, ev(12*time.Second, event.ExperimentStart{ID: "e2", Trigger: event.TriggerKey}),
		ev(13*time.Second, event.ExperimentFingerprint{Exp: "e2", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: goodCommit}}}))
	if h := header(p); strings.Contains(h, "server ") {
		t.Errorf("a manual experiment's fingerprint: %q", h)
	}

	// A server found running (adopted): its commit is unknown, so a pull
	// shows nothing more.
	a := newSized(200, 24, Options{})
	send(a, ev(0, repoHead(goodCommit, "good")), ev(time.Second, tuitest.ReadyStatus()))
	send(a, pulled(10*time.Second)...)
	if h := header(a); strings.Contains(h, "server ") || !strings.Contains(h, "HEAD e7b9c70") {
		t.Errorf("adopted: %q", h)
	}
	// ... unless the ledger holds the launch-started experiment of its log
	// (an earlier session's, once the history is folded in): its
	// fingerprint's HEAD.
	h := newSized(200, 24, Options{})
	send(h, ev(0, event.ExperimentStart{ID: "e1", Trigger: event.TriggerLaunch, Launch: &event.LaunchInfo{LogPath: "/l/old.log"}}),
		ev(0, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: goodCommit}}}),
		ev(time.Second, repoHead(goodCommit, "good")))
	adopted := tuitest.ReadyStatus()
	adopted.LogPath, adopted.LaunchedAt = "/l/old.log", time.Time{}
	send(h, ev(2*time.Second, adopted))
	send(h, pulled(10*time.Second)...)
	if hd := header(h); !strings.Contains(hd, mismatch) {
		t.Errorf("adopted, its launch in the ledger: %q", hd)
	}
	// ... or the host's history does: the launch in an earlier session's
	// journal, arriving after the server's status.
	hi := newSized(200, 24, Options{})
	send(hi, ev(0, repoHead(goodCommit, "good")), ev(time.Second, adopted))
	const old = "2026-12-01-101500-demo"
	send(hi, ev(2*time.Second, event.History{Journals: []event.HistoryJournal{{Name: old, Path: "/j/" + old + ".jsonl",
		Header: event.SessionHeader{Host: "simulated host", Created: at(-time.Hour)},
		Events: []event.Event{
			ev(-time.Hour, event.ExperimentStart{ID: old + ":e1", Trigger: event.TriggerLaunch, Launch: &event.LaunchInfo{LogPath: "/l/old.log"}}),
			ev(-time.Hour, event.ExperimentFingerprint{Exp: old + ":e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: goodCommit}}}),
			ev(-time.Hour+time.Minute, event.ExperimentEnd{Exp: old + ":e1", Trigger: event.TriggerQuit}),
		}}}}))
	send(hi, pulled(10*time.Second)...)
	if hd := header(hi); !strings.Contains(hd, mismatch) {
		t.Errorf("adopted, its launch in the host's history: %q", hd)
	}
	// A server another cockpit relaunched (its status names another log):
	// not the launch this cockpit saw.
	o := demoScene(200, Options{})
	send(o, pulled(100*time.Second)...)
	st := tuitest.ReadyStatus()
	st.LogPath = "/sim/logs/sim-other.log"
	send(o, ev(110*time.Second, st))
	if h := header(o); strings.Contains(h, "server ") {
		t.Errorf("another launch's server: %q", h)
	}
}

// A read-only cockpit (a replay, a follower) shows the same from the
// journal's events.
func TestServerCodeInAReplay(t *testing.T) {
	m := demoScene(200, Options{ReadOnly: true})
	send(m, pulled(100*time.Second)...)
	if h := screenLines(m)[0]; !strings.Contains(h, "replay") || !strings.Contains(h, "server a6d51c0 != HEAD e7b9c70") {
		t.Errorf("replay: %q", h)
	}
}

// The header at 80 and 120 columns: the server's commit against HEAD
// after a pull (with the HEAD-moved banner, then without it), and HEAD
// alone again after the relaunch. At 80 columns the commits take the
// host's place. Regenerate with go test -update.
func TestServerCodeGolden(t *testing.T) {
	for _, w := range []int{80, 120} {
		m := demoScene(w, Options{})
		send(m, pulled(100*time.Second)...)
		top := func() string {
			ls := screenLines(m)
			return strings.Join(ls[:3], "\n") + "\n"
		}
		var b strings.Builder
		b.WriteString(top())
		press(m, "esc") // the HEAD-moved banner
		b.WriteString(top())
		send(m, launchAt(120*time.Second, "e2", "/sim/logs/sim-2.log", pulledCommit)...)
		m.Update(ClockMsg{Now: at(150 * time.Second)})
		b.WriteString(top())
		tuitest.AuditGlyphs(t, "header", b.String())
		t.Run(map[int]string{80: "80x24", 120: "120x24"}[w], func(t *testing.T) {
			golden.RequireEqual(t, b.String())
		})
	}
}
