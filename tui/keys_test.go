package tui

import (
	"strings"
	"testing"
)

func TestQuitKeys(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		m := newSized(80, 24, Options{})
		if cmd := press(m, k); !isQuit(cmd) || !m.Quitting() {
			t.Errorf("%s did not quit", k)
		}
	}
	// ctrl+c while typing a filter cancels the filter (like esc); a second
	// ctrl+c, outside the input, quits.
	m := newSized(80, 24, Options{})
	press(m, "/")
	typeText(m, "nccl")
	if cmd := press(m, "ctrl+c"); isQuit(cmd) || m.Quitting() {
		t.Error("ctrl+c in the filter input quit instead of cancelling the filter")
	}
	if m.log.Typing() || m.Filter() != "" {
		t.Errorf("ctrl+c left the filter: typing %v, filter %q", m.log.Typing(), m.Filter())
	}
	if !isQuit(press(m, "ctrl+c")) || !m.Quitting() {
		t.Error("a second ctrl+c did not quit")
	}
}

func TestUnavailableKeysSayWhy(t *testing.T) {
	cases := map[string]string{
		"K": "server control not available here",
		"L": "server control not available here",
		"p": "server control not available here",
		"g": "the git panel needs --repo PATH (or repo in the host's config)",
		"e": noJournalText,
		"n": noJournalText,
		"b": "benchmark not available here: it needs a connection to the server's host",
		"R": "repeat not available here: it needs server control and a journal",
		"B": "open the experiments panel first (x)",
	}
	for k, want := range cases {
		m := newSized(80, 24, Options{})
		if cmd := press(m, k); cmd != nil {
			t.Errorf("%s returned a command", k)
		}
		if m.Status() != want {
			t.Errorf("%s: status %q, want %q", k, m.Status(), want)
		}
		ls := screenLines(m)
		if ls[len(ls)-1] != want {
			t.Errorf("%s: footer %q", k, ls[len(ls)-1])
		}
		press(m, "j") // any key clears the answer
		if m.Status() != "" {
			t.Errorf("status not cleared: %q", m.Status())
		}
	}
	m := newSized(80, 24, Options{ReadOnly: true})
	press(m, "K")
	if !strings.HasPrefix(m.Status(), "read-only replay:") {
		t.Errorf("read-only K: %q", m.Status())
	}
	press(m, "tab")
	if m.Status() != "all GPU rows fit on screen; nothing to scroll" {
		t.Errorf("tab with nothing to scroll: %q", m.Status())
	}
}

// wholeHelp is every screen of the open help, scrolled a page at a
// time from the top to the end.
func wholeHelp(m *Model) string {
	var b strings.Builder
	b.WriteString(plain(m))
	for range 20 {
		if m.helpTop >= m.helpMax {
			break
		}
		press(m, "pgdown")
		b.WriteString("\n" + plain(m))
	}
	return b.String()
}

func TestHelpListsEveryBinding(t *testing.T) {
	m := newSized(80, 24, Options{})
	press(m, "?")
	if !painted(m, m.styles.Dim, "K  kill the server: asks first, then waits for its GPU memory") || !painted(m, m.styles.Dim, "g  git") {
		t.Error("unavailable keys should be dimmed in help")
	}
	scr := wholeHelp(m)
	for _, b := range m.all() {
		h := b.Help()
		if !strings.Contains(scr, h.Key) || !strings.Contains(scr, h.Desc) {
			t.Errorf("help lacks %q %q:\n%s", h.Key, h.Desc, scr)
		}
	}
	press(m, "?")
	if strings.Contains(plain(m), "dim keys cannot act") {
		t.Error("? did not close help")
	}
	press(m, "?", "esc")
	if m.showHelp {
		t.Error("esc did not close help")
	}
}

func TestFooterFitsAndKeepsQuit(t *testing.T) {
	for _, w := range []int{40, 60, 80, 120, 200} {
		m := newSized(w, 24, Options{})
		ls := screenLines(m)
		f := ls[len(ls)-1]
		if len([]rune(f)) > w {
			t.Errorf("width %d: footer %d wide", w, len([]rune(f)))
		}
		if !strings.Contains(f, "q quit") || !strings.HasPrefix(f, "? help") {
			t.Errorf("width %d: footer %q", w, f)
		}
	}
	// x (the experiments panel) follows g and gives way like the actions:
	// the log keys come first, and the footer stays a prefix of the list.
	for w, want := range map[int]string{
		200: "? help  K kill  L launch  p profile  g git  x experiments  e experiment  n note  b bench  / filter  f follow  w wrap  z axis  q quit",
		93:  "? help  K kill  L launch  p profile  g git  x experiments  / filter  f follow  w wrap  q quit",
		92:  "? help  K kill  L launch  p profile  g git  / filter  f follow  w wrap  q quit",
		80:  "? help  K kill  L launch  p profile  g git  / filter  f follow  w wrap  q quit",
	} {
		ls := screenLines(newSized(w, 24, Options{}))
		if ls[len(ls)-1] != want {
			t.Errorf("%d columns: footer %q\nwant   %q", w, ls[len(ls)-1], want)
		}
	}
}

func TestKeyMapImplementsHelpKeyMap(t *testing.T) {
	k := newSized(80, 24, Options{}) // the cockpit, its panels' keys with its own
	if len(k.ShortHelp()) != 14 {
		t.Errorf("short help has %d bindings", len(k.ShortHelp()))
	}
	n := 0
	for _, col := range k.FullHelp() {
		n += len(col)
	}
	if n != len(k.all()) {
		t.Errorf("full help has %d of %d bindings", n, len(k.all()))
	}
	for _, b := range k.all() {
		for _, key := range b.Keys() {
			if strings.HasPrefix(key, "shift+") || strings.HasPrefix(key, "alt+") {
				t.Errorf("binding %q needs extended keys in tmux", key)
			}
		}
	}
}

// TestDangerousKeys: the keys that are hard to take back are marked
// Dangerous (they ask before they act), and only those.
func TestDangerousKeys(t *testing.T) {
	m := newSized(80, 24, Options{})
	var got []string
	for _, b := range m.all() {
		if b.Dangerous {
			got = append(got, b.Group+":"+b.Help().Key)
		}
	}
	want := "actions:K actions:T git:r git:a git:P git:D git:c git:u actions:X"
	if strings.Join(got, " ") != want {
		t.Errorf("dangerous keys %q, want %q", strings.Join(got, " "), want)
	}
}
