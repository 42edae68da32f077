package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/flightdeck-dev/flightdeck/tui"
)

// parseColor parses args with the colour flags as a command would.
func parseColor(t *testing.T, args ...string) (colorFlags, error) {
	t.Helper()
	var c colorFlags
	fl := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	addColorFlags(fl, &c)
	return c, fl.Parse(args)
}

// TestColorFlagPrecedence: a flag beats NO_COLOR; NO_COLOR beats
// detection; auto is detected the way Bubble Tea does (here forced with
// CLICOLOR_FORCE, since the test's output is not a terminal).
func TestColorFlagPrecedence(t *testing.T) {
	tty256 := []string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}
	with := func(env []string, more ...string) []string { return append(append([]string(nil), env...), more...) }
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want tui.ColorMode
	}{
		{"auto detects 256", nil, tty256, tui.Color256},
		{"auto detects truecolor", nil, with(tty256, "COLORTERM=truecolor"), tui.ColorTrueColor},
		{"auto detects 16", nil, []string{"TERM=xterm", "CLICOLOR_FORCE=1"}, tui.Color16},
		{"auto without a terminal", nil, []string{"TERM=xterm-256color"}, tui.ColorNever},
		{"auto on a dumb terminal", nil, []string{"TERM=dumb"}, tui.ColorNever},
		{"NO_COLOR means never", nil, with(tty256, "NO_COLOR=1"), tui.ColorNever},
		{"empty NO_COLOR is unset", nil, with(tty256, "NO_COLOR="), tui.Color256},
		{"--color 256 beats NO_COLOR", []string{"--color", "256"}, with(tty256, "NO_COLOR=1"), tui.Color256},
		{"--color=truecolor beats NO_COLOR", []string{"--color=truecolor"}, with(tty256, "NO_COLOR=1"), tui.ColorTrueColor},
		{"--color 16", []string{"--color", "16"}, tty256, tui.Color16},
		{"--color never", []string{"--color", "never"}, tty256, tui.ColorNever},
		{"--color auto ignores NO_COLOR", []string{"--color", "auto"}, with(tty256, "NO_COLOR=1"), tui.Color256},
		{"--color NEVER is case-insensitive", []string{"--color", "NEVER"}, tty256, tui.ColorNever},
		{"--no-color", []string{"--no-color"}, tty256, tui.ColorNever},
		{"--no-color=false is not given", []string{"--no-color=false"}, tty256, tui.Color256},
		{"--no-color=false and NO_COLOR", []string{"--no-color=false"}, with(tty256, "NO_COLOR=1"), tui.ColorNever},
		{"--no-color agrees with --color never", []string{"--no-color", "--color", "never"}, tty256, tui.ColorNever},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseColor(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.resolve(tc.env, &bytes.Buffer{}); got != tc.want {
				t.Errorf("%v with %v: %v, want %v", tc.args, tc.env, got, tc.want)
			}
		})
	}
}

func TestColorFlagRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--color", "rainbow"}, "want one of auto, never, 16, 256, truecolor"},
		{[]string{"--color", ""}, "want one of"},
		{[]string{"--color", "256", "--no-color"}, "--no-color contradicts --color 256"},
		{[]string{"--no-color", "--color", "truecolor"}, "--color contradicts --no-color never"},
		{[]string{"--no-color=maybe"}, "want true or false"},
	} {
		_, err := parseColor(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestScreenCommandsHaveColorFlags: every command that opens a screen has
// --color and keeps --no-color working but out of the help.
func TestScreenCommandsHaveColorFlags(t *testing.T) {
	for _, name := range []string{"connect", "demo", "replay", "follow"} {
		cmd, _, err := newRootCmd().Find([]string{name})
		if err != nil || cmd.Name() != name {
			if name == "follow" {
				continue // issue 7's follower, where it is built
			}
			t.Fatalf("%s: %v", name, err)
		}
		fl := cmd.Flags()
		if fl.Lookup("color") == nil {
			t.Errorf("%s has no --color", name)
		}
		nc := fl.Lookup("no-color")
		if nc == nil || !nc.Hidden {
			t.Errorf("%s: --no-color missing or not hidden", name)
			continue
		}
		if err := fl.Parse([]string{"--no-color"}); err != nil {
			t.Errorf("%s --no-color: %v", name, err)
		}
		if strings.Contains(fl.FlagUsages(), "no-color") {
			t.Errorf("%s help shows --no-color", name)
		}
	}
}
