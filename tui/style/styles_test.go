package style

import (
	"fmt"
	"image/color"
	"testing"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
)

// TestPaletteSurvivesDownsampling: after conversion to 256 colours, OK,
// Warn and Crit are three different colours; in 16 colours they are
// still green, yellow and red (normal or bright), on dark and light
// backgrounds alike.
func TestPaletteSurvivesDownsampling(t *testing.T) {
	family := map[ansi.BasicColor]string{
		ansi.Green: "green", ansi.BrightGreen: "green", ansi.Yellow: "yellow", ansi.BrightYellow: "yellow",
		ansi.Red: "red", ansi.BrightRed: "red",
	}
	for _, dark := range []bool{true, false} {
		s := Default(dark)
		c256 := func(c color.Color) string { return fmt.Sprint(colorprofile.ANSI256.Convert(c)) }
		if ok, warn, crit := c256(s.OK.Fg), c256(s.Warn.Fg), c256(s.Crit.Fg); ok == warn || warn == crit || ok == crit {
			t.Errorf("dark=%v 256 colours: OK %s, Warn %s, Crit %s are not three colours", dark, ok, warn, crit)
		}
		for _, tc := range []struct {
			name string
			tone Tone
			want string
		}{{"OK", s.OK, "green"}, {"Warn", s.Warn, "yellow"}, {"Crit", s.Crit, "red"}} {
			c16, _ := colorprofile.ANSI.Convert(tc.tone.Fg).(ansi.BasicColor)
			if got := family[c16]; got != tc.want {
				t.Errorf("dark=%v 16 colours: %s is ANSI %d (%q), want %s", dark, tc.name, c16, got, tc.want)
			}
		}
	}
}
