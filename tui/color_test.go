package tui

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

func TestParseColorMode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ColorMode
	}{
		{"auto", ColorAuto}, {"never", ColorNever}, {"16", Color16}, {"256", Color256},
		{"truecolor", ColorTrueColor}, {"TrueColor", ColorTrueColor}, {" never ", ColorNever},
	} {
		got, err := ParseColorMode(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseColorMode(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if again, err := ParseColorMode(got.String()); err != nil || again != got {
			t.Errorf("%v does not round-trip: %v, %v", got, again, err)
		}
	}
	for _, bad := range []string{"", "8", "always", "24bit", "none"} {
		if _, err := ParseColorMode(bad); err == nil || !strings.Contains(err.Error(), "auto, never, 16, 256, truecolor") {
			t.Errorf("ParseColorMode(%q): error %v", bad, err)
		}
	}
	if s := ColorMode(9).String(); s != "ColorMode(9)" {
		t.Errorf("out of range String = %q", s)
	}
}

// sgrColours classifies the colour parameters of every SGR sequence in
// out: "basic" (30-37, 40-47, 90-97, 100-107, and 39/49 defaults), "256"
// (38;5;n / 48;5;n) and "truecolor" (38;2;r;g;b / 48;2;r;g;b), with a
// count of each; attributes (bold, faint, reverse, resets) are not
// colours.
func sgrColours(out []byte) map[string]int {
	seen := map[string]int{}
	for _, m := range sgrRE.FindAllSubmatch(out, -1) {
		params := strings.FieldsFunc(string(m[1]), func(r rune) bool { return r == ';' || r == ':' })
		for i := 0; i < len(params); i++ {
			n, _ := strconv.Atoi(params[i])
			switch {
			case n == 38 || n == 48 || n == 58:
				if i+1 < len(params) && params[i+1] == "5" {
					seen["256"]++
					i += 2
				} else if i+1 < len(params) && params[i+1] == "2" {
					seen["truecolor"]++
					i += 4
				}
			case n >= 30 && n <= 49, n >= 90 && n <= 97, n >= 100 && n <= 107:
				seen["basic"]++
			}
		}
	}
	return seen
}

var sgrRE = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)

// sgrHas reports whether an SGR sequence in out has the parameter param
// ("1" bold, "7" reverse video).
func sgrHas(out []byte, param string) bool {
	for _, m := range sgrRE.FindAllSubmatch(out, -1) {
		for _, p := range strings.Split(string(m[1]), ";") {
			if p == param {
				return true
			}
		}
	}
	return false
}

// runToFrame runs m in a real program writing to a buffer at 80x24 and
// quits at once: the buffer holds the whole first frame as the terminal
// would receive it.
// env is the terminal's environment (nil: the process's).
func runToFrame(t *testing.T, m *Model, env []string) []byte {
	t.Helper()
	var out bytes.Buffer
	msgs := make(chan tea.Msg, 1)
	msgs <- tea.KeyPressMsg{Code: 'q', Text: "q"}
	close(msgs)
	opts := []tea.ProgramOption{tea.WithInput(nil), tea.WithWindowSize(80, 24), tea.WithoutSignalHandler()}
	if env != nil {
		opts = append(opts, tea.WithEnvironment(env))
	}
	b := Bridge{Msgs: msgs, Screen: screen.Target{Out: &out, Env: env, Width: 80, Height: 24}}
	if err := b.Run(context.Background(), m, opts...); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !bytes.Contains(out.Bytes(), []byte("Gen5x16")) {
		t.Fatalf("no GPU rows in the output: %.300q", out.String())
	}
	return out.Bytes()
}

// TestColorModesWriteTheirEscapes: a real program in each mode writes the
// colour escapes of that mode and no other. The trouble scene paints warn,
// crit, OK, dim and accent cells.
func TestColorModesWriteTheirEscapes(t *testing.T) {
	// Detection as Bubble Tea does it, on a terminal claiming 256 colours.
	env256 := []string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}
	for _, tc := range []struct {
		name  string
		o     Options
		env   []string
		want  string // the one kind of colour escape expected; "" for none
		plain bool
	}{
		{"never", Options{Color: ColorNever}, nil, "", true},
		{"NoColor", Options{NoColor: true}, nil, "", true},
		{"never beats a 256-colour terminal", Options{Color: ColorNever}, env256, "", true},
		{"16", Options{Color: Color16}, nil, "basic", false},
		{"256", Options{Color: Color256}, nil, "256", false},
		{"truecolor", Options{Color: ColorTrueColor}, nil, "truecolor", false},
		{"auto detects", Options{}, env256, "256", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := troubleScene(tc.o)
			if m.Styles().Plain != tc.plain {
				t.Errorf("palette plain = %v, want %v", m.Styles().Plain, tc.plain)
			}
			out := runToFrame(t, m, tc.env)
			seen := sgrColours(out)
			for kind, n := range seen {
				if kind != tc.want {
					t.Errorf("%d %s colour escapes in %s mode", n, kind, tc.name)
				}
			}
			if tc.want != "" && seen[tc.want] == 0 {
				t.Errorf("no %s colour escapes: %.300q", tc.want, out)
			}
			if tc.plain {
				// Abnormal values still stand out: bold, and reverse for crit.
				if !sgrHas(out, "1") || !sgrHas(out, "7") {
					t.Errorf("plain output has no bold or no reverse: %.300q", out)
				}
			}
		})
	}
}

func TestColorOptions(t *testing.T) {
	if n := len((Options{}).ColorOptions()); n != 0 {
		t.Errorf("auto adds %d program options, want none (Bubble Tea detects)", n)
	}
	for _, o := range []Options{{Color: ColorNever}, {NoColor: true}, {NoColor: true, Color: ColorTrueColor}, {Color: Color256}} {
		if n := len(o.ColorOptions()); n != 1 {
			t.Errorf("%+v: %d program options, want 1", o, n)
		}
	}
	if !(Options{NoColor: true, Color: ColorTrueColor}).plain() {
		t.Error("NoColor must win over a forced profile")
	}
	for c, want := range map[ColorMode]colorprofile.Profile{
		ColorAuto: colorprofile.Unknown, ColorNever: colorprofile.ASCII, Color16: colorprofile.ANSI,
		Color256: colorprofile.ANSI256, ColorTrueColor: colorprofile.TrueColor,
	} {
		if got := c.Profile(); got != want {
			t.Errorf("%v.Profile() = %v, want %v", c, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	var buf bytes.Buffer // not a terminal
	for _, tc := range []struct {
		env  []string
		want ColorMode
	}{
		{[]string{"TERM=xterm-256color"}, ColorNever}, // not a terminal
		{[]string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}, Color256},
		{[]string{"TERM=xterm-256color", "CLICOLOR_FORCE=1", "COLORTERM=truecolor"}, ColorTrueColor},
		{[]string{"TERM=xterm", "CLICOLOR_FORCE=1"}, Color16},
		{[]string{"TERM=xterm-256color", "TTY_FORCE=1", "NO_COLOR=1"}, ColorNever},
		// Any non-empty value (no-color.org), though colorprofile reads
		// only the ones strconv.ParseBool calls true.
		{[]string{"TERM=xterm-256color", "CLICOLOR_FORCE=1", "NO_COLOR=yes"}, ColorNever},
		{[]string{"TERM=xterm-256color", "CLICOLOR_FORCE=1", "NO_COLOR="}, Color256},
	} {
		if got := ColorAuto.Detect(&buf, tc.env); got != tc.want {
			t.Errorf("Detect(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
	if got := Color16.Detect(&buf, []string{"NO_COLOR=1"}); got != Color16 {
		t.Errorf("a forced mode was detected: %v", got)
	}
}
