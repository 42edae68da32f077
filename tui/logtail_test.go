package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
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

func numbered(from, n int) serverlog.Lines {
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
	if m.Filter() != "nccl" || strings.Join(logBody(m), "|") != strings.Join(want, "|") {
		t.Errorf("enter should keep the filter: %q %q", m.Filter(), logBody(m))
	}
	// New lines are filtered as they arrive.
	send(m, ev(time.Second, linesOf("decode again", "NCCL error: unhandled system error")))
	if got := logBody(m); got[len(got)-1] != "NCCL error: unhandled system error" || len(got) != 3 {
		t.Errorf("incremental filter: %q", got)
	}
	if !strings.Contains(plain(m), "filter nccl 3 lines (esc clears)") {
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

func TestLogResetMarkerAndRing(t *testing.T) {
	m := newSized(80, 24, Options{LogLines: 50})
	send(m, ev(0, numbered(0, 120)))
	if m.log.count() != 50 || m.log.entry(m.log.start).text != "line 0070" {
		t.Errorf("ring keeps %d lines from %q", m.log.count(), m.log.entry(m.log.start).text)
	}
	send(m, ev(0, serverlog.Reset{Reason: "truncated", Offset: 0}), ev(0, numbered(0, 2)))
	body := logBody(m)
	if body[len(body)-3] != "── log truncated, restarting at 0 ──" {
		t.Errorf("reset marker: %q", body)
	}
	// The marker survives a filter, so the context of matches is visible.
	press(m, "/")
	typeText(m, "0001")
	if got := logBody(m); len(got) != 2 || !strings.HasPrefix(got[0], "── log truncated") {
		t.Errorf("filtered with marker: %q", got)
	}
	// The filter drops matches that fall out of the ring.
	press(m, "esc", "/")
	typeText(m, "line 0")
	send(m, ev(0, numbered(200, 60)))
	if m.log.count() != 50 || m.log.matches[0] != m.log.start {
		t.Errorf("stale matches after wrap: %d %v start %d", m.log.count(), m.log.matches, m.log.start)
	}
}

func TestReadyAndFailureLinesHighlighted(t *testing.T) {
	m := newSized(100, 24, Options{})
	ready := "[2025-10-22 10:27:58] The server is fired up and ready to roll!"
	oom := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
	send(m, ev(0, linesOf("loading weights", ready)), ev(0, serverlog.Ready{Server: "sglang", Text: ready}))
	// The failure can arrive before its line.
	send(m, ev(time.Second, serverlog.Failure{Class: serverlog.FailOOM, Text: oom}), ev(time.Second, linesOf(oom, "after")))
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
		send(m, ev(0, serverlog.Ready{Server: "x\x1b[31m", Text: nasty[0]}))
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
	if len(m.log.entry(m.log.start).text) > 5*4096 {
		t.Errorf("a 100 kB line is stored whole (%d bytes)", len(m.log.entry(m.log.start).text))
	}
}
