package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/tui"
)

// colorFlags are --color and its hidden alias --no-color, shared by the
// commands that open a screen (connect, demo, replay, follow).
type colorFlags struct {
	mode tui.ColorMode
	by   string // the flag that set mode ("color", "no-color"); "" when neither was given
}

// addColorFlags defines --color and the hidden --no-color on fl.
func addColorFlags(fl *pflag.FlagSet, c *colorFlags) {
	fl.Var(colorValue{c}, "color", "colours: auto (detect the terminal's), never, 16, 256 or truecolor; NO_COLOR means never unless --color is given")
	fl.Var(noColorValue{c}, "no-color", "same as --color never")
	fl.Lookup("no-color").NoOptDefVal = "true"
	_ = fl.MarkHidden("no-color") // cannot fail: the flag was just defined
}

// resolve returns the mode the screen uses for the environment environ
// ("KEY=value", as os.Environ returns) and the terminal out: the flag when
// given (no-color.org: a flag overrides the environment), else never when
// NO_COLOR is set and not empty, else auto. Auto is then detected as
// Bubble Tea would (tui.ColorMode.Detect), so that the palette matches the
// escapes: a terminal without colours gets the bold/reverse palette. An
// explicit --color auto detects without NO_COLOR.
func (c colorFlags) resolve(environ []string, out io.Writer) tui.ColorMode {
	mode := c.mode
	if c.by == "" && getenv(environ, "NO_COLOR") != "" {
		mode = tui.ColorNever
	}
	if mode != tui.ColorAuto {
		return mode
	}
	if c.by != "" {
		environ = withoutEnv(environ, "NO_COLOR")
	}
	return mode.Detect(out, environ)
}

// Mode is resolve for this process: its environment and its stdout.
func (c colorFlags) Mode() tui.ColorMode { return c.resolve(os.Environ(), os.Stdout) }

// getenv returns the last value of key in environ ("" when absent).
func getenv(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// withoutEnv returns environ without the entries for key.
func withoutEnv(environ []string, key string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// set records mode as given by flag, refusing a contradiction between
// --color and --no-color.
func (c *colorFlags) set(flag string, mode tui.ColorMode) error {
	if c.by != "" && c.by != flag && c.mode != mode {
		return fmt.Errorf("--%s contradicts --%s %s", flag, c.by, c.mode)
	}
	c.mode, c.by = mode, flag
	return nil
}

// colorValue is --color's pflag.Value.
type colorValue struct{ c *colorFlags }

func (v colorValue) String() string {
	if v.c == nil {
		return tui.ColorAuto.String()
	}
	return v.c.mode.String()
}

func (v colorValue) Set(s string) error {
	mode, err := tui.ParseColorMode(s)
	if err != nil {
		return fmt.Errorf("want one of %s", strings.Join(tui.ColorModeNames(), ", "))
	}
	return v.c.set("color", mode)
}

func (colorValue) Type() string { return "mode" }

// noColorValue is the hidden --no-color's pflag.Value: a boolean, where
// --no-color=false is as if it were not given.
type noColorValue struct{ c *colorFlags }

func (v noColorValue) String() string {
	return strconv.FormatBool(v.c != nil && v.c.by == "no-color")
}

func (v noColorValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	if !b {
		return nil
	}
	return v.c.set("no-color", tui.ColorNever)
}

func (noColorValue) Type() string { return "bool" }

func (noColorValue) IsBoolFlag() bool { return true }
