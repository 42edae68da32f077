package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The checks the tmux tests make of a captured screen: intact at a size,
// the main view, the launch form's box, a client's terminal against the
// cockpit's, the colour escapes; and TestPairScreenChecks, which tries them
// on made-up screens.

// screenRows splits a capture-pane -p capture into its rows.
func screenRows(screen string) []string {
	return strings.Split(strings.TrimSuffix(screen, "\n"), "\n")
}

// escapeDebris matches what a broken escape sequence leaves on screen:
// an ESC itself, or the tail of a CSI (e.g. "[0m", "[38;5;245m", "[2J",
// ";1H"). Cursor and erase tails need a number, so log text such as
// "[Gloo] Rank 0" or "[H200]" is not debris.
var escapeDebris = regexp.MustCompile(`\x1b|\[[0-9;:]*m|\[[0-9;]+[HJKfABCDG]|;[0-9]+[Hm]`)

// intactAt is a check of any cockpit screen captured at w×h: exactly h
// rows, none wider than w, the header on the first, a footer on the last,
// no escape debris.
func intactAt(w, h int) func(string) string {
	return func(screen string) string {
		rows := screenRows(screen)
		if len(rows) != h {
			return fmt.Sprintf("%d rows, want %d", len(rows), h)
		}
		if !strings.HasPrefix(rows[0], "flightdeck ") {
			return "the first row is not the header"
		}
		if strings.TrimSpace(rows[h-1]) == "" {
			return "the last row (footer) is blank"
		}
		for i, row := range rows {
			if n := ansi.StringWidth(row); n > w {
				return fmt.Sprintf("row %d is %d columns wide, over %d: %q", i+1, n, w, row)
			}
			if m := escapeDebris.FindString(row); m != "" {
				return fmt.Sprintf("row %d has escape debris %q: %q", i+1, m, row)
			}
		}
		return ""
	}
}

// mainView is a check of the main screen (no overlay) laid out for width
// w: one row per GPU, each once; the log's title rule drawn to the full
// width (a rule from an earlier, narrower layout would stop short); one
// header, one GPU table heading, at most one key footer (the footer may
// be a status message instead).
func mainView(w int) func(string) string {
	return func(screen string) string {
		if n := countGPURows(screen); n != 8 {
			return fmt.Sprintf("%d GPU rows, want 8", n)
		}
		var rule string
		for _, row := range screenRows(screen) {
			if strings.HasPrefix(row, "log ") && strings.HasSuffix(row, "-") {
				rule = row
			}
		}
		if rule == "" {
			return "no log title rule"
		}
		if n := ansi.StringWidth(rule); n != w {
			return fmt.Sprintf("the log title rule is %d columns, want %d: %q", n, w, rule)
		}
		// Stale rows from another layout would repeat the heading, the
		// header or the key footer.
		if n := strings.Count(screen, "\nGPU  name"); n != 1 {
			return fmt.Sprintf("%d GPU table headings, want 1", n)
		}
		if n := strings.Count(screen, "\nflightdeck  "); n != 0 {
			return fmt.Sprintf("%d more headers below the first row", n)
		}
		if n := strings.Count(screen, "? help  "); n > 1 {
			return fmt.Sprintf("%d key footers, want 1", n)
		}
		return ""
	}
}

// formBox is a check that the launch form's box is drawn whole: a top
// edge "+- relaunch …+", a bottom edge in the same columns, and every row
// between with "|" at both. Columns are runes (the cockpit's chrome has
// only single-width glyphs).
func formBox(screen string) string {
	if !strings.Contains(screen, "flightdeck sim server") {
		return "the form does not show the command"
	}
	rows := screenRows(screen)
	top, left, right := -1, 0, 0
	for i, row := range rows {
		if l := strings.Index(row, "+- relaunch "); l >= 0 {
			top, left = i, len([]rune(row[:l]))
			right = left + len([]rune(row[l:strings.LastIndex(row, "+")]))
			break
		}
	}
	if top < 0 || right <= left {
		return "no launch form"
	}
	for i := top + 1; i < len(rows); i++ {
		row := []rune(rows[i])
		if len(row) <= right {
			return fmt.Sprintf("form row %d ends at column %d, before the box's right edge %d: %q", i+1, len(row), right+1, rows[i])
		}
		if row[left] == '+' && row[right] == '+' && strings.Trim(string(row[left+1:right]), "-") == "" {
			return "" // the bottom edge
		}
		if row[left] != '|' || row[right] != '|' {
			return fmt.Sprintf("form row %d lacks the box's sides at columns %d and %d: %q", i+1, left+1, right+1, rows[i])
		}
	}
	return "the form has no bottom edge"
}

// clientShows checks a client's terminal (its capture) against the
// cockpit's w×h screen: the same text in the top-left w×h, and outside it
// only what tmux draws where a window does not reach (a border and dots).
func clientShows(client, cockpit string, w, h int) string {
	want := screenRows(cockpit)
	got := screenRows(client)
	if len(got) < h {
		return fmt.Sprintf("%d rows, smaller than the window's %d", len(got), h)
	}
	for i, row := range got {
		in, out := row, ""
		if ansi.StringWidth(row) > w {
			in = ansi.Truncate(row, w, "")
			out = strings.TrimPrefix(row, in)
		}
		if i >= h {
			in, out = "", row
		}
		if i < h && strings.TrimRight(in, " ") != want[i] {
			return fmt.Sprintf("row %d is %q, the cockpit's is %q", i+1, strings.TrimRight(in, " "), want[i])
		}
		if strings.Trim(out, " │─┘·") != "" {
			return fmt.Sprintf("row %d has %q outside the window", i+1, out)
		}
	}
	return ""
}

// sgrSeq matches a Select Graphic Rendition sequence and captures its
// parameters.
var sgrSeq = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// colourSGRs returns the SGR sequences in s (a capture-pane -e capture)
// that set a colour: foreground or background 30–37, 40–47, 90–97,
// 100–107, extended 38/48 (and underline colour 58) in both the ";" and
// ":" forms. Resets to the default colour (39, 49) and attributes (bold,
// faint, reverse …) are not colours. truecolour is whether any of them is
// 24-bit (38;2 / 48;2 …).
func colourSGRs(s string) (found []string, truecolour bool) {
	for _, m := range sgrSeq.FindAllStringSubmatch(s, -1) {
		params := strings.Split(m[1], ";")
		colour := false
		for i := 0; i < len(params); i++ {
			sub := strings.Split(params[i], ":")
			n, err := strconv.Atoi(sub[0])
			if err != nil {
				continue // an empty parameter is 0, a reset
			}
			switch {
			case n >= 30 && n <= 37, n >= 40 && n <= 47, n >= 90 && n <= 97, n >= 100 && n <= 107:
				colour = true
			case n == 38 || n == 48 || n == 58:
				colour = true
				kind := ""
				if len(sub) > 1 {
					kind = sub[1] // 38:2:… or 38:5:…
				} else if i+1 < len(params) {
					kind = params[i+1]
					if kind == "2" {
						i += 4 // 2;r;g;b
					} else {
						i += 2 // 5;n
					}
				}
				if kind == "2" {
					truecolour = true
				}
			}
		}
		if colour {
			found = append(found, m[0])
		}
	}
	return found, truecolour
}

// fakeMain is a main screen as the cockpit lays it out at w×h (w ≥ 80,
// h ≥ 13), for testing the checks above.
func fakeMain(w, h int) []string {
	rows := []string{"flightdeck  demo  root@127.0.0.1:1  connected", "GPU  name  util  mem GiB"}
	for i := 0; i < 8; i++ {
		rows = append(rows, fmt.Sprintf("%d    H200  98%%   123.9/140.4  620/700  33C   1980    P0   Gen5x16  -", i))
	}
	rule := "log /tmp/x.log  follow "
	rows = append(rows, rule+strings.Repeat("-", w-len(rule)))
	for len(rows) < h-1 {
		rows = append(rows, "")
	}
	return append(rows, "? help  q quit")
}

func screenOf(rows []string) string { return strings.Join(rows, "\n") + "\n" }

// TestPairScreenChecks: the checks the tmux tests make catch what a broken
// screen would show.
func TestPairScreenChecks(t *testing.T) {
	edit := func(w, h int, f func([]string) []string) string { return screenOf(f(fakeMain(w, h))) }
	for _, c := range []struct {
		name, screen string
		check        func(string) string
		want         string // a part of the complaint; "" for none
	}{
		{"intact", screenOf(fakeMain(100, 30)), intactAt(100, 30), ""},
		{"main", screenOf(fakeMain(100, 30)), mainView(100), ""},
		{"short", edit(100, 30, func(r []string) []string { return r[1:] }), intactAt(100, 30), "29 rows, want 30"},
		{"no header", edit(100, 30, func(r []string) []string { r[0] = "lightdeck"; return r }), intactAt(100, 30), "not the header"},
		{"no footer", edit(100, 30, func(r []string) []string { r[29] = "  "; return r }), intactAt(100, 30), "footer"},
		{"wide", edit(100, 30, func(r []string) []string { r[5] += strings.Repeat("x", 40); return r }), intactAt(100, 30), "row 6 is 108 columns wide"},
		{"wide glyphs", edit(100, 30, func(r []string) []string { r[12] = strings.Repeat("界", 51); return r }), intactAt(100, 30), "102 columns"},
		{"sgr debris", edit(100, 30, func(r []string) []string { r[3] += "[0m"; return r }), intactAt(100, 30), `"[0m"`},
		{"cup debris", edit(100, 30, func(r []string) []string { r[3] += "12;1H"; return r }), intactAt(100, 30), `";1H"`},
		{"esc", edit(100, 30, func(r []string) []string { r[3] += "\x1b"; return r }), intactAt(100, 30), "escape debris"},
		{"log timestamps are text", edit(100, 30, func(r []string) []string {
			r[12] = "[2026-11-30 04:41:43 TP0] Decode batch. #token: 856 [31412]"
			r[13] = "[Gloo] Rank 0 is connected to 7 peer ranks [H200] [A] [K]"
			return r
		}), intactAt(100, 30), ""},
		{"narrow rule", screenOf(fakeMain(100, 60)), mainView(200), "the log title rule is 100 columns, want 200"},
		{"stale footer", edit(100, 30, func(r []string) []string { r[20] = r[29]; return r }), mainView(100), "2 key footers"},
		{"stale header", edit(100, 30, func(r []string) []string { r[20] = r[0]; return r }), mainView(100), "1 more headers"},
		{"lost GPU", edit(100, 30, func(r []string) []string { r[4] = ""; return r }), mainView(100), "7 GPU rows"},
		{"stale table", edit(100, 30, func(r []string) []string {
			return append(r[:20], append(fakeMain(100, 10)[1:10], r[29])...)
		}), mainView(100), "GPU rows, want 8"},
	} {
		got := c.check(c.screen)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want a complaint containing %q", c.name, got, c.want)
		}
	}

	form := func(f func(rows []string) []string) string {
		rows := []string{"flightdeck  demo", "log line under the form"}
		rows = append(rows, "log text  +- relaunch sglang pid 1 ----+ log text")
		for _, in := range []string{"> preset < sim >", "command", "  flightdeck sim server"} {
			rows = append(rows, "log text  | "+in+strings.Repeat(" ", 27-len(in))+"| log text")
		}
		rows = append(rows, "log text  +"+strings.Repeat("-", 28)+"+ log text", "enter launch")
		return screenOf(f(rows))
	}
	for _, c := range []struct{ name, screen, want string }{
		{"whole", form(func(r []string) []string { return r }), ""},
		{"side lost", form(func(r []string) []string { r[4] = strings.Replace(r[4], "|", " ", 1); return r }), "form row 5 lacks the box's sides at columns 11 and 40"},
		{"cut short", form(func(r []string) []string { r[3] = r[3][:30]; return r }), "form row 4 ends at column 30"},
		{"no bottom", form(func(r []string) []string { return r[:6] }), "no bottom edge"},
		{"footer over the bottom", form(func(r []string) []string { return append(r[:6], r[7]) }), "form row 7 ends at column 12"},
		{"no form", screenOf(fakeMain(100, 30)), "does not show the command"},
	} {
		got := formBox(c.screen)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("formBox %s: got %q, want a complaint containing %q", c.name, got, c.want)
		}
	}

	cockpit := screenOf(fakeMain(100, 30))
	padded := func(f func(i int, row string) string) string {
		var out []string
		for i, row := range fakeMain(100, 30) {
			out = append(out, f(i, row+strings.Repeat(" ", 100-ansi.StringWidth(row))+"│"+strings.Repeat("·", 99)))
		}
		out = append(out, strings.Repeat("─", 100)+"┘"+strings.Repeat("·", 99))
		for len(out) < 60 {
			out = append(out, strings.Repeat("·", 200))
		}
		return screenOf(out)
	}
	for _, c := range []struct{ name, client, want string }{
		{"same", cockpit, ""},
		{"same within a bigger terminal", padded(func(_ int, r string) string { return r }), ""},
		{"stale text outside", padded(func(i int, r string) string {
			if i == 7 {
				return r[:len(r)-10] + "cuda graph"
			}
			return r
		}), `row 8 has "`},
		{"stale text below", padded(func(i int, r string) string { return r }) + "? help\n", `row 61 has "? help"`},
		{"differs", strings.Replace(cockpit, "33C", "34C", 1), "row 3 is"},
		{"smaller", screenOf(fakeMain(100, 30)[:20]), "20 rows"},
	} {
		got := clientShows(c.client, cockpit, 100, 30)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("clientShows %s: got %q, want a complaint containing %q", c.name, got, c.want)
		}
	}

	for _, c := range []struct {
		in         string
		n          int
		truecolour bool
	}{
		{"plain \x1b[1mbold\x1b[0m \x1b[2;7mfaint reverse\x1b[m", 0, false},
		{"\x1b[39;49mdefault colours", 0, false},
		{"\x1b[31mred", 1, false},
		{"\x1b[1;91mbright red", 1, false},
		{"\x1b[104mbright blue background", 1, false},
		{"\x1b[38;5;245mgrey \x1b[48;5;1mred bg", 2, false},
		{"\x1b[38;2;10;20;30mrgb", 1, true},
		{"\x1b[48:2::10:20:30mrgb with colons", 1, true},
		{"\x1b[38;5;2;7mpalette 2 then reverse", 1, false},
		{"\x1b[38;5;31;1m palette 31 is not basic red", 1, false},
	} {
		found, tc := colourSGRs(c.in)
		if len(found) != c.n || tc != c.truecolour {
			t.Errorf("colourSGRs(%q) = %q, truecolour %v; want %d, %v", c.in, found, tc, c.n, c.truecolour)
		}
	}
}
