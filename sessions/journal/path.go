package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultDir returns where journals go by default:
// $XDG_STATE_HOME/flightdeck/journals when XDG_STATE_HOME is an absolute
// path (the XDG rule: a relative one is ignored), else
// ~/.local/state/flightdeck/journals. It errors only when neither is set
// and the home directory is unknown.
func DefaultDir() (string, error) {
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "flightdeck", "journals"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		if err == nil {
			err = errors.New("$HOME is empty")
		}
		return "", fmt.Errorf("journal directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "flightdeck", "journals"), nil
}

// NewPath returns dir/<host>/<2006-01-02-150405>-<name>.jsonl for a
// session started at t (in t's location), with host and name made
// filename-safe by SafeName; an empty name gives "<time>-session.jsonl".
func NewPath(dir, host, name string, t time.Time) string {
	if name == "" {
		name = "session"
	}
	return filepath.Join(dir, SafeName(host), t.Format("2006-01-02-150405")+"-"+SafeName(name)+".jsonl")
}

// SafeName returns s with every byte that is not a letter, digit, '.',
// '_', '-' or '@' replaced by '_', never empty ("_") and never "." or ".."
// (or a name starting with "."): safe as one path element.
func SafeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == '@':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || out[0] == '.' {
		out = "_" + out
	}
	if len(out) > 120 {
		out = out[:120]
	}
	return out
}
