package journal

import (
	"path/filepath"
	"testing"
	"time"
)

func TestDefaultDir(t *testing.T) {
	t.Setenv("HOME", "/home/ana")
	for _, c := range []struct{ xdg, want string }{
		{"/state", "/state/flightdeck/journals"},
		{"", "/home/ana/.local/state/flightdeck/journals"},
		{"relative/state", "/home/ana/.local/state/flightdeck/journals"}, // XDG: relative paths are ignored
	} {
		t.Setenv("XDG_STATE_HOME", c.xdg)
		got, err := DefaultDir()
		if err != nil || got != c.want {
			t.Errorf("XDG_STATE_HOME=%q: %q, %v; want %q", c.xdg, got, err, c.want)
		}
	}
}

func TestNewPath(t *testing.T) {
	at := time.Date(2026, 11, 29, 21, 58, 7, 0, time.UTC)
	for _, c := range []struct{ host, name, want string }{
		{"gpu-box", "baseline", "gpu-box/2026-11-29-215807-baseline.jsonl"},
		{"root@10.1.2.3:22", "nccl ll/ring", "root@10.1.2.3_22/2026-11-29-215807-nccl_ll_ring.jsonl"},
		{"", "", "_/2026-11-29-215807-session.jsonl"},
		{"..", "../../etc/passwd", "_../2026-11-29-215807-_.._.._etc_passwd.jsonl"},
		{"héte", ".hidden", "h__te/2026-11-29-215807-_.hidden.jsonl"},
	} {
		got := NewPath("/j", c.host, c.name, at)
		if want := filepath.Join("/j", c.want); got != want {
			t.Errorf("NewPath(%q, %q) = %q, want %q", c.host, c.name, got, want)
		}
		if filepath.Dir(filepath.Dir(got)) != "/j" {
			t.Errorf("NewPath(%q, %q) = %q escapes the directory", c.host, c.name, got)
		}
	}
}
