package tui

import (
	"fmt"
	"io"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// ColorMode says which colours the cockpit writes (the --color flag).
type ColorMode uint8

const (
	// ColorAuto lets Bubble Tea detect the terminal's colours when the
	// program starts (colorprofile.Detect: NO_COLOR, CLICOLOR, TERM,
	// terminfo, and tmux's own RGB/Tc). Resolve it first with Detect to
	// also pick the colourless palette when none are found.
	ColorAuto ColorMode = iota
	// ColorNever writes no colour escapes at all: the PlainStyles palette
	// marks abnormal values by bold and reverse video instead.
	ColorNever
	// Color16 forces the 16 ANSI colours (4-bit).
	Color16
	// Color256 forces the xterm 256-colour palette (8-bit).
	Color256
	// ColorTrueColor forces 24-bit colour.
	ColorTrueColor
)

// colorModeNames are the modes as ParseColorMode spells them, by value.
var colorModeNames = [...]string{"auto", "never", "16", "256", "truecolor"}

// ColorModeNames returns the values ParseColorMode accepts, in the
// flag's order (a new slice each call).
func ColorModeNames() []string { return append([]string(nil), colorModeNames[:]...) }

// ParseColorMode parses a --color value: auto, never, 16, 256 or truecolor
// (case-insensitive). Anything else is an error naming the valid values.
func ParseColorMode(s string) (ColorMode, error) {
	for i, name := range colorModeNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return ColorMode(i), nil
		}
	}
	return ColorAuto, fmt.Errorf("color %q: want one of %s", s, strings.Join(ColorModeNames(), ", "))
}

// String returns the mode as ParseColorMode spells it.
func (c ColorMode) String() string {
	if int(c) < len(colorModeNames) {
		return colorModeNames[c]
	}
	return fmt.Sprintf("ColorMode(%d)", uint8(c))
}

// Profile is the colour profile the mode forces on the program;
// colorprofile.Unknown for ColorAuto (detected when the program starts).
// ColorNever is colorprofile.ASCII: text attributes (bold, reverse) but no
// colours, so even a component that names a colour writes none.
func (c ColorMode) Profile() colorprofile.Profile {
	switch c {
	case ColorNever:
		return colorprofile.ASCII
	case Color16:
		return colorprofile.ANSI
	case Color256:
		return colorprofile.ANSI256
	case ColorTrueColor:
		return colorprofile.TrueColor
	}
	return colorprofile.Unknown
}

// Detect resolves ColorAuto for a terminal writing to out with the
// environment env ("KEY=value" entries, as os.Environ returns), the way
// Bubble Tea would when the program starts: ColorNever when NO_COLOR is set
// and not empty or colorprofile finds no colours (TERM=dumb, out not a
// terminal), else the mode
// of the profile found, so the palette and the escapes agree. Other modes
// are returned as they are. In tmux, detection may run `tmux info`.
func (c ColorMode) Detect(out io.Writer, env []string) ColorMode {
	if c != ColorAuto {
		return c
	}
	for _, kv := range env {
		// no-color.org: any non-empty value. colorprofile only honours
		// values strconv.ParseBool reads as true, and only on a terminal.
		if v, ok := strings.CutPrefix(kv, "NO_COLOR="); ok && v != "" {
			return ColorNever
		}
	}
	switch p := colorprofile.Detect(out, env); {
	case p == colorprofile.TrueColor:
		return ColorTrueColor
	case p == colorprofile.ANSI256:
		return Color256
	case p == colorprofile.ANSI:
		return Color16
	default:
		return ColorNever
	}
}

// plain reports whether the options ask for no colours: NoColor (kept for
// callers that set it from NO_COLOR) or ColorNever.
func (o Options) plain() bool { return o.NoColor || o.Color == ColorNever }

// ColorOptions are the program options that carry the colour mode:
// a forced profile, or none for ColorAuto (Bubble Tea detects it).
func (o Options) ColorOptions() []tea.ProgramOption {
	if p := o.ForcedProfile(); p != colorprofile.Unknown {
		return []tea.ProgramOption{tea.WithColorProfile(p)}
	}
	return nil
}

// ForcedProfile is the profile the colour options force (NoColor or
// ColorNever: ASCII), colorprofile.Unknown for ColorAuto (detected).
func (o Options) ForcedProfile() colorprofile.Profile {
	c := o.Color
	if o.plain() {
		c = ColorNever
	}
	return c.Profile()
}
