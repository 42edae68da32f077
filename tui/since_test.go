package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// pulled is what a session finds after a `git pull` between sessions,
// with two more changes: the seeds' regression, as the banner shows it.
func pulledChanges(since time.Time) event.HostChanges {
	return event.HostChanges{Host: "root@gpu-box:22", Repo: "/srv/sglang", Seen: true, Since: since, Journal: "/j/2026-12-01-101500-gpu-box.jsonl",
		Changes: []event.HostChange{
			{Group: "git", Name: "HEAD", Was: "a6d51c0c6f1e", Now: "e7b9c70aa1b2", How: []string{"pull"},
				Range: &event.CommitRange{AheadTotal: 2, Ahead: []string{"e7b9c70 [CI] Raise the nightly benchmark timeout", "65b09bf Fix PCG MoE Error"},
					Files: []string{"python/sglang/srt/distributed/device_communicators/pynccl.py", "python/sglang/srt/distributed/parallel_state.py"}, FilesTotal: 2},
				Detail: []string{"reflog 2026-12-01 18:02 e7b9c70 pull: Fast-forward"}},
			{Group: "versions", Name: "torch", Was: "2.5.1", Now: "2.6.0"},
			{Group: "kernel", Name: "kernel", Was: "6.8.0-49", Now: "6.8.0-51\x1b[31m"},
		}}
}

// The first screen at 80x24 names the pull, its commits and files, and
// the other changes; esc dismisses it; H lists every change first.
func TestSinceBanner(t *testing.T) {
	utcLocal(t) // the golden names the time of day
	m := scene(80, 24, 8, 50, Options{})
	send(m, ev(194*time.Second, pulledChanges(t0.Add(-17*time.Hour))))
	scr := plain(m)
	for _, want := range []string{"since your last session here", "(yesterday 17:27): HEAD a6d51c0 -> e7b9c70 by git", "pull, 2 commits, touches pynccl.py, parallel_state.py", "also: torch 2.5.1 -> 2.6.0; kernel 6.8.0-49 -> 6.8.0-51"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(m.View().Content, "\x1b[31m") {
		t.Error("remote text reached the screen unsanitised")
	}
	assertFits(t, m, 80, 24, "since banner")
	golden.RequireEqual(t, scr)

	press(m, "H")
	if m.overlay.TopID() != "since" {
		t.Fatalf("H opened %q", m.overlay.TopID())
	}
	scr = plain(m)
	for _, want := range []string{"3 changes", "reflog 2026-12-01 18:02 e7b9c70 pull: Fast-forward", "kernel 6.8.0-49 -> 6.8.0-51"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the list lacks %q:\n%s", want, scr)
		}
	}
	press(m, "esc")
	if m.overlay.TopID() != "" || !strings.Contains(plain(m), "a6d51c0 -> e7b9c70") {
		t.Fatal("esc closes the list, the banner stays")
	}
	// Changes stay until dismissed, however long.
	send(m, ev(10*time.Minute, h200s(8)))
	if !strings.Contains(plain(m), "a6d51c0 -> e7b9c70") {
		t.Error("the changes went by themselves")
	}
	press(m, "esc")
	if strings.Contains(plain(m), "since your last session") {
		t.Error("esc did not dismiss the banner")
	}
}

// At 200 columns the banner is one line with its keys.
func TestSinceBannerWide(t *testing.T) {
	m := scene(200, 40, 8, 50, Options{})
	send(m, ev(194*time.Second, pulledChanges(t0.Add(-17*time.Hour))))
	var got []string
	for _, l := range screenLines(m) {
		if strings.Contains(l, "since your last") || strings.HasPrefix(l, "also:") {
			got = append(got, strings.TrimRight(l, " "))
		}
	}
	if len(got) != 2 || !strings.HasSuffix(got[0], "touches pynccl.py, parallel_state.py  (H: all, esc: dismiss)") {
		t.Errorf("banner lines %q", got)
	}
}

// Nothing changed and a first session: one line that goes by itself, or
// on esc; H says why it has nothing to list.
func TestSinceQuietLine(t *testing.T) {
	for _, c := range []struct {
		c         event.HostChanges
		line, why string
	}{
		{event.HostChanges{Seen: true, Since: t0.Add(-17 * time.Hour)}, "nothing changed since your last session here (", "nothing changed since your last session here"},
		{event.HostChanges{}, "first session on this host", "first session on this host: nothing recorded to compare with"},
	} {
		m := scene(80, 24, 8, 50, Options{})
		press(m, "H")
		if !strings.Contains(m.Status(), "still being compared") {
			t.Errorf("H before the comparison: %q", m.Status())
		}
		send(m, ev(194*time.Second, c.c))
		var lines []string
		banners := func() string { ls := screenLines(m); return strings.Join(ls[:len(ls)-1], "\n") } // the footer says why H cannot act
		for _, l := range screenLines(m) {
			if strings.Contains(l, c.line) {
				lines = append(lines, l)
			}
		}
		if len(lines) != 1 {
			t.Errorf("%q: %d lines:\n%s", c.line, len(lines), plain(m))
		}
		press(m, "H")
		if m.Status() != c.why || m.overlay.TopID() != "" {
			t.Errorf("H: %q", m.Status())
		}
		send(m, ev(194*time.Second+SinceQuiet-time.Second, h200s(8)))
		if !strings.Contains(banners(), c.line) {
			t.Errorf("%q went too soon", c.line)
		}
		send(m, ev(194*time.Second+SinceQuiet, h200s(8)))
		if strings.Contains(banners(), c.line) {
			t.Errorf("%q did not go by itself", c.line)
		}
		m = scene(80, 24, 8, 50, Options{})
		send(m, ev(194*time.Second, c.c))
		press(m, "esc")
		if strings.Contains(plain(m), c.line) {
			t.Errorf("%q: esc did not dismiss it", c.line)
		}
		// A HEAD move seen live while the line is up: esc takes the alert
		// first, and the line goes by itself.
		m = scene(80, 24, 8, 50, Options{})
		send(m, ev(194*time.Second, c.c))
		send(m, pulled(195*time.Second)...)
		if !m.git.Moved() || !strings.Contains(plain(m), c.line) {
			t.Fatalf("%q: the HEAD-moved banner and the line are not both up:\n%s", c.line, plain(m))
		}
		press(m, "esc")
		if m.git.Moved() || !strings.Contains(plain(m), c.line) {
			t.Errorf("%q: esc did not take the HEAD-moved banner first:\n%s", c.line, plain(m))
		}
		press(m, "esc")
		if strings.Contains(plain(m), c.line) {
			t.Errorf("%q: a second esc did not dismiss it", c.line)
		}
	}
}

// utcLocal marks a test whose golden names a time of day: TestMain makes
// the local zone UTC for the whole package, before any goroutine starts
// (a write to time.Local during a test races with goroutines earlier
// tests left reading it).
func utcLocal(t *testing.T) {
	if time.Local != time.UTC {
		t.Fatal("TestMain did not make the local zone UTC")
	}
}

// The notice takes the lines the live alerts leave: a HEAD move seen live
// at 80x24 stays on the screen beside it, the notice on one line with the
// count of its other changes.
func TestSinceBannerGivesWayToLiveAlerts(t *testing.T) {
	utcLocal(t)
	m := scene(80, 24, 8, 50, Options{})
	send(m, ev(194*time.Second, pulledChanges(t0.Add(-17*time.Hour))))
	send(m, pulled(195*time.Second)...)
	scr := plain(m)
	for _, want := range []string{"since your last session here", "(+2 more) H/esc", "HEAD moved a6d51c0 -> e7b9c70"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	if strings.Contains(scr, "more notices") {
		t.Errorf("a notice was cut:\n%s", scr)
	}
}
