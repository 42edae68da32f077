package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// helpHint is the last row of a help screen that scrolls.
func helpHint(m *Model) string {
	ls := screenLines(m)
	return ls[len(ls)-2] // above the footer
}

// At 80x24 the help is taller than the screen: it scrolls with the
// scrolling keys, says what is left below, and closes with esc, ? or q
// (q does not quit while it is open); j and k scroll rather than close.
func TestHelpScrolls(t *testing.T) {
	m := scene(80, 24, 8, 100, Options{Label: "demo"})
	send(m, ev(4*time.Second, srcSimAgent))
	press(m, "?")
	if h := helpHint(m); !strings.HasPrefix(h, "-- 1-") || !strings.Contains(h, "more below: j or pgdn") {
		t.Fatalf("no scroll hint: %q\n%s", h, plain(m))
	}
	first := plain(m)
	press(m, "j")
	if !m.showHelp || plain(m) == first {
		t.Fatalf("j did not scroll the help:\n%s", plain(m))
	}
	if !strings.HasPrefix(helpHint(m), "-- 2-") {
		t.Errorf("after j: %q", helpHint(m))
	}
	press(m, "k")
	if plain(m) != first {
		t.Errorf("k did not scroll back:\n%s", plain(m))
	}
	press(m, "k") // at the top: stays
	if plain(m) != first {
		t.Errorf("k at the top moved:\n%s", plain(m))
	}
	// To the end: the last of the actions and what the GPU columns mean.
	var all strings.Builder
	for range 10 {
		all.WriteString(plain(m))
		press(m, "pgdown")
	}
	all.WriteString(plain(m))
	for _, want := range []string{"T  take over", "GPU table", "rx/tx  PCIe throughput, MiB/s", "procs  processes using the GPU", "Xid    an Xid NVML reported leads the Xid/throttle column"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the scrolled help lacks %q:\n%s", want, all.String())
		}
	}
	if h := helpHint(m); !strings.Contains(h, "k or pgup scrolls back") {
		t.Errorf("at the end: %q", h)
	}
	press(m, "pgup")
	press(m, "home")
	if plain(m) != first {
		t.Errorf("home did not go to the top:\n%s", plain(m))
	}
	press(m, "end")
	if !strings.Contains(helpHint(m), "scrolls back") {
		t.Errorf("end: %q", helpHint(m))
	}
	// Closing: esc, ? and q; q does not quit.
	for _, k := range []string{"esc", "?", "q"} {
		if !m.showHelp {
			press(m, "?")
		}
		if cmd := press(m, k); cmd != nil || m.Quitting() {
			t.Errorf("%s quit", k)
		}
		if m.showHelp {
			t.Errorf("%s did not close the help", k)
		}
	}
	// Opened again, it starts at the top.
	press(m, "?", "end", "?", "?")
	if plain(m) != first {
		t.Errorf("reopened help does not start at the top:\n%s", plain(m))
	}
	// Any other key acts as without the help: tab moves the focus.
	press(m, "tab")
	if !m.gpus.Focused {
		t.Error("tab did not act with the help open")
	}
	// ctrl+c still quits.
	m.showHelp = true
	press(m, "ctrl+c")
	if !m.Quitting() {
		t.Error("ctrl+c did not quit with the help open")
	}
	// Taller, it fits: no hint, and j has nothing to scroll.
	m = scene(160, 45, 8, 100, Options{})
	press(m, "?")
	before := plain(m)
	press(m, "j")
	if strings.Contains(before, "more below") || plain(m) != before {
		t.Errorf("a help that fits scrolled:\n%s", plain(m))
	}
	// A resize clamps the window.
	m = scene(80, 24, 8, 100, Options{})
	press(m, "?", "end")
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 60})
	if s := plain(m); strings.Contains(s, "more below") || !strings.Contains(s, "keys  (esc closes") {
		t.Errorf("after growing:\n%s", s)
	}
}
