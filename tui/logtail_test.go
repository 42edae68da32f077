package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
)

// logBody returns the visible log lines (between the log title and footer).
func logBody(m *Model) []string {
	ls := screenLines(m)
	for i, l := range ls {
		if strings.HasPrefix(l, "log") || strings.HasPrefix(l, "/") {
			body := ls[i+1 : len(ls)-1]
			for len(body) > 0 && body[len(body)-1] == "" {
				body = body[:len(body)-1]
			}
			return body
		}
	}
	return nil
}

func logTitle(m *Model) string {
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "log") || strings.HasPrefix(l, "/") {
			return l
		}
	}
	return ""
}

func numbered(from, n int) event.LogLines {
	var ts []string
	for i := from; i < from+n; i++ {
		ts = append(ts, fmt.Sprintf("line %04d", i))
	}
	return linesOf(ts...)
}

func TestLogFollowAndScroll(t *testing.T) {
	m := newSized(80, 24, Options{})
	send(m, ev(0, numbered(0, 100)))
	body := logBody(m)
	if len(body) == 0 || body[len(body)-1] != "line 0099" {
		t.Fatalf("following view should end at the newest line: %q", body)
	}
	h := len(body)

	press(m, "k")
	if m.Following() {
		t.Fatal("k should pause follow")
	}
	if got := logBody(m); got[len(got)-1] != "line 0098" {
		t.Errorf("after k: last %q", got[len(got)-1])
	}
	// New lines do not move a paused view; the title counts them.
	send(m, ev(time.Second, numbered(100, 5)))
	if got := logBody(m); got[len(got)-1] != "line 0098" {
		t.Errorf("paused view moved: last %q", got[len(got)-1])
	}
	if title := logTitle(m); !strings.Contains(title, "paused +5 new (G follows)") {
		t.Errorf("title %q", title)
	}
	press(m, "pgup")
	if got := logBody(m); got[len(got)-1] != fmt.Sprintf("line %04d", 98-(h-1)) {
		t.Errorf("after pgup: last %q, page %d", got[len(got)-1], h-1)
	}
	press(m, "home")
	if got := logBody(m); got[0] != "line 0000" {
		t.Errorf("home: first %q", got[0])
	}
	press(m, "j")
	if got := logBody(m); got[0] != "line 0001" {
		t.Errorf("j: first %q", got[0])
	}
	press(m, "G")
	if !m.Following() || logBody(m)[len(logBody(m))-1] != "line 0104" {
		t.Errorf("G should resume follow at the newest line: %q", logBody(m))
	}
	press(m, "f")
	send(m, ev(time.Second, numbered(105, 3)))
	if m.Following() || logBody(m)[len(logBody(m))-1] != "line 0104" {
		t.Error("f should pause follow in place")
	}
	press(m, "f")
	if !m.Following() || logBody(m)[len(logBody(m))-1] != "line 0107" {
		t.Error("f again should resume")
	}
	press(m, "up")
	press(m, "end")
	if !m.Following() {
		t.Error("end should resume follow")
	}
}

func TestLogFilter(t *testing.T) {
	m := newSized(80, 24, Options{})
	send(m, ev(0, linesOf(
		"[TP0] Decode batch. gen throughput (token/s): 82.41",
		"NCCL INFO Channel 00/16 : 0 1 2 3",
		"[TP1] Decode batch. gen throughput (token/s): 82.40",
		"nccl WARN NET/IB : No device found.",
		"Uvicorn running on http://0.0.0.0:30000",
	)))
	press(m, "/")
	typeText(m, "NcCl")
	if title := logTitle(m); !strings.HasPrefix(title, "/NcCl") {
		t.Errorf("filter input not shown: %q", title)
	}
	want := []string{"NCCL INFO Channel 00/16 : 0 1 2 3", "nccl WARN NET/IB : No device found."}
	if got := logBody(m); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("live filter: %q", got)
	}
	// The match is highlighted.
	if !strings.Contains(m.View().Content, m.styles.Accent.Render("NCCL")) {
		t.Error("match not highlighted")
	}
	press(m, "enter")
	if m.Filter() != "NcCl" || strings.Join(logBody(m), "|") != strings.Join(want, "|") {
		t.Errorf("enter should keep the filter: %q %q", m.Filter(), logBody(m))
	}
	// New lines are filtered as they arrive.
	send(m, ev(time.Second, linesOf("decode again", "NCCL error: unhandled system error")))
	if got := logBody(m); got[len(got)-1] != "NCCL error: unhandled system error" || len(got) != 3 {
		t.Errorf("incremental filter: %q", got)
	}
	// The title shows the filter as typed; matching ignores case.
	if !strings.Contains(plain(m), "filter NcCl 3 lines (esc clears)") {
		t.Errorf("filter not in title:\n%s", plain(m))
	}
	// Keys work normally after enter (q would quit; here: k scrolls).
	press(m, "k")
	if m.Following() {
		t.Error("k after enter should scroll, not type")
	}
	press(m, "esc")
	if m.Filter() != "" || len(logBody(m)) != 7 {
		t.Errorf("esc should clear the filter: %q", logBody(m))
	}
	// esc while typing clears too.
	press(m, "/")
	typeText(m, "uvicorn")
	if len(logBody(m)) != 1 {
		t.Errorf("typing filter: %q", logBody(m))
	}
	press(m, "esc")
	if m.Filter() != "" || len(logBody(m)) != 7 {
		t.Errorf("esc while typing should clear: %q", logBody(m))
	}
	// q while typing is text, not quit.
	press(m, "/")
	if cmd := press(m, "q"); cmd != nil && isQuit(cmd) {
		t.Error("q in the filter input quit the program")
	}
}

// TestFilterPromptStaysOpen: only esc (or ctrl+c) closes the filter input.
// Backspace on an empty filter, in any of the forms terminals send, keeps
// it open, so further typing stays text and never runs as keys (the "q" of
// "seq-d" quit the cockpit in a user test).
func TestFilterPromptStaysOpen(t *testing.T) {
	backspaces := []tea.KeyPressMsg{
		{Code: tea.KeyBackspace},
		{Code: tea.KeyBackspace, Mod: tea.ModAlt},
		{Code: tea.KeyBackspace, Mod: tea.ModCtrl},
		{Code: tea.KeyBackspace, Mod: tea.ModShift},
		{Code: 'h', Mod: tea.ModCtrl},
		{Code: tea.KeyDelete},
	}
	for _, bs := range backspaces {
		t.Run(bs.String(), func(t *testing.T) {
			m := newSized(80, 24, Options{})
			send(m, ev(0, linesOf("seq-d 1", "other")))
			press(m, "/")
			for range 3 {
				m.Update(bs)
			}
			if !m.log.Typing() || !strings.HasPrefix(logTitle(m), "/") {
				t.Fatalf("%s on an empty filter closed the prompt: %q", bs, logTitle(m))
			}
			for _, r := range "seq-d" {
				if _, cmd := m.Update(tea.KeyPressMsg{Code: r, Text: string(r)}); isQuit(cmd) || m.Quitting() {
					t.Fatalf("typing after %s quit the cockpit", bs)
				}
			}
			if m.Filter() != "seq-d" || !m.log.Typing() {
				t.Errorf("after typing: filter %q, typing %v", m.Filter(), m.log.Typing())
			}
			// Deleting back to empty keeps it open too.
			for range 8 {
				m.Update(bs)
			}
			if !m.log.Typing() {
				t.Errorf("deleting the filter with %s closed the prompt", bs)
			}
		})
	}
}

func TestLogResetMarkerAndRing(t *testing.T) {
	m := newSized(80, 24, Options{LogLines: 50})
	send(m, ev(0, numbered(0, 120)))
	if m.log.Count() != 50 || m.log.Entry(m.log.Start).Text != "line 0070" {
		t.Errorf("ring keeps %d lines from %q", m.log.Count(), m.log.Entry(m.log.Start).Text)
	}
	send(m, ev(0, event.LogReset{Reason: "truncated", Offset: 0}), ev(0, numbered(0, 2)))
	body := logBody(m)
	if body[len(body)-3] != "-- log truncated, restarting at 0 --" {
		t.Errorf("reset marker: %q", body)
	}
	// The marker survives a filter, so the context of matches is visible.
	press(m, "/")
	typeText(m, "0001")
	if got := logBody(m); len(got) != 2 || !strings.HasPrefix(got[0], "-- log truncated") {
		t.Errorf("filtered with marker: %q", got)
	}
	// The filter drops matches that fall out of the ring.
	press(m, "esc", "/")
	typeText(m, "line 0")
	send(m, ev(0, numbered(200, 60)))
	if m.log.Count() != 50 || m.log.Matches[0] != m.log.Start {
		t.Errorf("stale matches after wrap: %d %v start %d", m.log.Count(), m.log.Matches, m.log.Start)
	}
}

func TestReadyAndFailureLinesHighlighted(t *testing.T) {
	m := newSized(100, 24, Options{})
	ready := "[2025-10-22 10:27:58] The server is fired up and ready to roll!"
	oom := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
	send(m, ev(0, linesOf("loading weights", ready)), ev(0, event.ServerReady{Server: "sglang", Text: ready}))
	// The failure can arrive before its line.
	send(m, ev(time.Second, event.ServerFailure{Class: event.FailOOM, Text: oom}), ev(time.Second, linesOf(oom, "after")))
	c := m.View().Content
	if !strings.Contains(c, m.styles.OK.Render(ready)) {
		t.Error("ready line not highlighted")
	}
	if !strings.Contains(c, m.styles.Crit.Render(oom)) {
		t.Error("failure line not highlighted")
	}
	if strings.Contains(c, m.styles.Crit.Render("after")) {
		t.Error("unrelated line highlighted")
	}
}

// TestNastyLogLineNeverEmitsEscapes feeds terminal attacks as log text: the
// only escape sequences left in the frame must be our own SGR styling.
func TestNastyLogLineNeverEmitsEscapes(t *testing.T) {
	nasty := []string{
		"\x1b]52;c;ZWNobyBwd25lZA==\x07clipboard",
		"\x1b[2J\x1b[Hcleared screen",
		"\x1b[21t title report",
		"progress 10%\rprogress 100%",
		"back\x08\x08\x08space",
		"\u202egnp.exe\u202c bidi",
		"c1 \u009b31m csi",
		"\x1bP+q544e\x1b\\ dcs",
		"bad utf8 \xff\xfe",
		"unterminated \x1b]0;title",
		"#033[2mCloudWatch#033[0m",
	}
	for _, o := range []Options{{}, {NoColor: true}} {
		m := newSized(120, 30, o)
		send(m, ev(0, linesOf(nasty...)))
		send(m, ev(0, event.ServerReady{Server: "x\x1b[31m", Text: nasty[0]}))
		m.Update(HeadMsg{Head: "abc\x1b]0;pwn\x07"})
		c := m.View().Content
		if err := onlySGR(c); err != nil {
			t.Errorf("NoColor=%v: %v", o.NoColor, err)
		}
		for _, bad := range []string{"\r", "\x08", "\u202e", "\u009b", "\x07"} {
			if strings.Contains(c, bad) {
				t.Errorf("NoColor=%v: frame contains %q", o.NoColor, bad)
			}
		}
		if !strings.Contains(plain(m), "clipboard") || !strings.Contains(plain(m), "cleared screen") {
			t.Errorf("the readable text of nasty lines should survive:\n%s", plain(m))
		}
	}
}

// onlySGR checks that every ESC in s starts a CSI ... m sequence of digits,
// ';' and ':' (colours and attributes), and nothing else.
func onlySGR(s string) error {
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			continue
		}
		if i+1 >= len(s) || s[i+1] != '[' {
			return fmt.Errorf("non-CSI escape at %d: %q", i, s[i:min(len(s), i+12)])
		}
		j := i + 2
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
			j++
		}
		if j >= len(s) || s[j] != 'm' {
			return fmt.Errorf("non-SGR CSI at %d: %q", i, s[i:min(len(s), j+1)])
		}
		i = j
	}
	return nil
}

func TestLongAndWideLinesFitTheWidth(t *testing.T) {
	m := newSized(80, 24, Options{})
	send(m, ev(0, linesOf(strings.Repeat("x", 100000), "宽字符日志行"+strings.Repeat("宽", 60), "tab\there")))
	for i, l := range strings.Split(m.View().Content, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d cells wide", i, w)
		}
	}
	if len(m.log.Entry(m.log.Start).Text) > 5*4096 {
		t.Errorf("a 100 kB line is stored whole (%d bytes)", len(m.log.Entry(m.log.Start).Text))
	}
}

// unwrap joins wrapped body rows back into source lines: a row that starts
// with the continuation mark continues the line before it.
func unwrap(rows []string) []string {
	var out []string
	for _, r := range rows {
		if c, ok := strings.CutPrefix(r, logtail.WrapMark); ok && len(out) > 0 {
			out[len(out)-1] += c
			continue
		}
		out = append(out, r)
	}
	return out
}

func TestLogWrap(t *testing.T) {
	m := newSized(80, 24, Options{})
	var src []string
	for i := range 40 {
		src = append(src, decodeLine(i, 80+float64(i)/100))
	}
	send(m, ev(0, linesOf(src...)))
	newest := src[len(src)-1]
	if strings.Contains(plain(m), "gen throughput") {
		t.Fatal("the setup expects decode lines cut at 80 columns")
	}
	h := len(logBody(m))

	press(m, "w")
	if !m.Wrapping() || !strings.Contains(logTitle(m), "  follow wrap ") {
		t.Fatalf("w should turn wrap on and say so: %q", logTitle(m))
	}
	body := logBody(m)
	if len(body) != h {
		t.Fatalf("wrapped view has %d rows, want the same %d", len(body), h)
	}
	for i, r := range body {
		if w := ansi.StringWidth(r); w > 80 {
			t.Errorf("row %d is %d cells: %q", i, w, r)
		}
	}
	// Follow fills from the bottom: the last rows are the newest line,
	// whole, with its throughput in view.
	lines := unwrap(body)
	if lines[len(lines)-1] != newest {
		t.Errorf("newest line not whole at the bottom:\n got %q\nwant %q", lines[len(lines)-1], newest)
	}
	if !strings.Contains(strings.Join(body, "\n"), "gen throughput (token/s): 80.39") {
		t.Errorf("throughput of the newest line not on screen: %q", body)
	}
	// Every whole line shown reads as its source; the top one may be a tail.
	for i, l := range lines[1:] {
		if want := src[len(src)-len(lines)+1+i]; l != want {
			t.Errorf("line %d: %q, want %q", i, l, want)
		}
	}
	if !strings.HasSuffix(src[len(src)-len(lines)], strings.TrimPrefix(lines[0], logtail.WrapMark)) {
		t.Errorf("top row is not the tail of its line: %q", lines[0])
	}
	if !painted(m, m.styles.Dim, logtail.WrapMark) {
		t.Error("continuation mark should be dim")
	}

	// Scrolling is by source lines; the top of a paused view is a line start.
	press(m, "home")
	if got := logBody(m); got[0] != src[0][:80] || !strings.HasPrefix(got[1], logtail.WrapMark) {
		t.Errorf("home: %q", got[:2])
	}
	press(m, "j")
	if got := logBody(m); got[0] != src[1][:80] {
		t.Errorf("j: %q", got[0])
	}
	if !strings.Contains(logTitle(m), "  paused wrap ") {
		t.Errorf("paused title: %q", logTitle(m))
	}
	// Scrolled to the end while paused, the newest line is whole.
	for range 50 {
		press(m, "j")
	}
	if got := unwrap(logBody(m)); got[len(got)-1] != newest {
		t.Errorf("paused at the bottom, newest line cut: %q", got[len(got)-1])
	}
	// A page moves by the lines that were on screen.
	press(m, "home")
	shown := len(unwrap(logBody(m)))
	press(m, "pgdown")
	if got := logBody(m); got[0] != src[shown-1][:80] {
		t.Errorf("pgdn from the top: first %q, want line %d", got[0], shown-1)
	}
	press(m, "G", "w")
	if m.Wrapping() || strings.Contains(logTitle(m), "wrap") {
		t.Errorf("w again should turn wrap off: %q", logTitle(m))
	}
	if got := logBody(m); got[len(got)-1] != newest[:80] {
		t.Errorf("unwrapped: %q", got[len(got)-1])
	}
}

func TestLogWrapWidths(t *testing.T) {
	wide := strings.Repeat("宽", 100) // 200 cells
	cases := []struct {
		name string
		line string
		rows int
	}{
		{"exactly the width", strings.Repeat("x", 80), 1},
		{"one more", strings.Repeat("x", 81), 2},
		{"two rows exactly", strings.Repeat("x", 80+78), 2},
		{"wide runes never split", wide, 3}, // 80 + 78 + 42 cells
		{"wide rune at the edge", "y" + wide, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newSized(80, 24, Options{})
			press(m, "w")
			send(m, ev(0, linesOf(c.line)))
			body := logBody(m)
			if len(body) != c.rows {
				t.Fatalf("%d rows, want %d: %q", len(body), c.rows, body)
			}
			for i, r := range body {
				if w := ansi.StringWidth(r); w > 80 {
					t.Errorf("row %d is %d cells", i, w)
				}
				if i > 0 && ansi.StringWidth(r) < 80-1 && i < len(body)-1 {
					t.Errorf("row %d is short (%d cells) before the last", i, ansi.StringWidth(r))
				}
			}
			if got := unwrap(body); got[0] != c.line {
				t.Errorf("rows do not join back into the line: %q", got)
			}
		})
	}
	// A resize re-wraps (the row breaks of wide lines are cached by width).
	m := newSized(80, 24, Options{})
	press(m, "w")
	send(m, ev(0, linesOf(wide)))
	for _, w := range []int{60, 80, 33} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		body := logBody(m)
		for i, r := range body {
			if got := ansi.StringWidth(r); got > w || (i < len(body)-1 && got < w-1) {
				t.Errorf("width %d: row %d is %d cells", w, i, got)
			}
		}
		if got := unwrap(body); len(got) != 1 || got[0] != wide {
			t.Errorf("width %d: rows do not join back: %q", w, got)
		}
	}

	// A line taller than the log area shows its tail when following, its
	// head when scrolled to it.
	m = newSized(80, 24, Options{})
	press(m, "w")
	long := strings.Repeat("0123456789", 400) + " END"
	send(m, ev(0, linesOf("before", long)))
	body := logBody(m)
	if !strings.HasSuffix(body[len(body)-1], " END") || len(body) != 18 {
		t.Errorf("follow on a tall line: %d rows, last %q", len(body), body[len(body)-1])
	}
	press(m, "k")
	if got := logBody(m); got[0] != "before" || got[1] != long[:80] {
		t.Errorf("scrolled up: %q", got[:2])
	}
	press(m, "j")
	if got := logBody(m); got[0] != long[:80] {
		t.Errorf("scrolled to the tall line: %q", got[0])
	}
}

func TestLogWrapKeepsFilterHighlight(t *testing.T) {
	m := newSized(80, 24, Options{})
	send(m, ev(0, linesOf(decodeLine(1, 82.41), "other")))
	press(m, "w", "/")
	typeText(m, "token/s")
	press(m, "enter")
	if got := logBody(m); len(got) != 2 || !strings.Contains(got[1], "token/s") {
		t.Fatalf("filtered and wrapped: %q", got)
	}
	if !painted(m, m.styles.Accent, "token/s") {
		t.Error("match on a continuation row not highlighted")
	}
}

// A long log path gives way to the follow state in the title.
func TestLogTitleKeepsStateOverPath(t *testing.T) {
	m := newSized(80, 24, Options{})
	ls := numbered(0, 50)
	ls.Path = "/tmp/flightdeck-sim-3254472238/logs/sglang.log"
	send(m, ev(0, ls))
	press(m, "w", "k")
	more := numbered(50, 2)
	more.Path = ls.Path
	send(m, ev(time.Second, more))
	title := logTitle(m)
	if !strings.Contains(title, "paused wrap +2 new (G follows)") {
		t.Errorf("state cut: %q", title)
	}
	if !strings.HasPrefix(title, "log ...") || !strings.Contains(title, "/logs/sglang.log  paused") {
		t.Errorf("path should lose its head: %q", title)
	}
	if w := ansi.StringWidth(title); w != 80 {
		t.Errorf("title is %d cells", w)
	}
	// Room to spare: the whole path.
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 24})
	if title := logTitle(m); !strings.HasPrefix(title, "log "+ls.Path+"  paused") {
		t.Errorf("wide title: %q", title)
	}
}

// TestLogNoticeSaysWhyNothingArrives: a mistyped --log, or a directory,
// must not look like a quiet server.
func TestLogNoticeSaysWhyNothingArrives(t *testing.T) {
	m := newSized(120, 24, Options{LogPath: "/data/logs/sglang.log"})
	send(m, ev(time.Second, event.LogNotice{Path: "/data/logs/sglang.log", Class: event.NoticeMissing,
		Text: "cannot open '/data/logs/sglang.log' for reading: No such file or directory"}))
	scr := plain(m)
	if !strings.Contains(scr, "log /data/logs/sglang.log  missing, waiting for it") {
		t.Errorf("title does not say the file is missing:\n%s", scr)
	}
	if !strings.Contains(scr, "cannot open '/data/logs/sglang.log' for reading: No such file or directory") {
		t.Errorf("log area does not show tail's reason:\n%s", scr)
	}

	send(m, ev(2*time.Second, event.LogNotice{Path: "/tmp", Class: event.NoticeNotAFile, Text: "error reading '/tmp': Is a directory\x1b[2J"}))
	if scr := plain(m); !strings.Contains(scr, "not a regular file") || strings.Contains(m.View().Content, "\x1b[2J") {
		t.Errorf("not-a-file notice:\n%s", scr)
	}

	// The file appears: the notice goes, lines show.
	send(m, ev(3*time.Second, event.LogNotice{Path: "/tmp", Class: event.NoticeAppeared}),
		ev(3*time.Second, event.LogLines{Lines: []event.LogLine{{Text: []byte("first line")}}}))
	scr = plain(m)
	if strings.Contains(scr, "not a regular file") || strings.Contains(scr, "Is a directory") || !strings.Contains(scr, "first line") {
		t.Errorf("after the file appeared:\n%s", scr)
	}
}
