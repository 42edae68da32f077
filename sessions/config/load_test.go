package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ xdg, want string }{
		{"/x/conf", "/x/conf/flightdeck/config.toml"},
		{"", filepath.Join(home, ".config/flightdeck/config.toml")},
		{"relative/dir", filepath.Join(home, ".config/flightdeck/config.toml")},
	}
	for _, tt := range tests {
		t.Setenv("XDG_CONFIG_HOME", tt.xdg)
		got, err := DefaultPath()
		if err != nil || got != tt.want {
			t.Errorf("XDG_CONFIG_HOME=%q: %q, %v; want %q", tt.xdg, got, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)

	c, err := LoadDefault()
	if err != nil || c.Path != "" || c.Defaults.Preset != "sglang" || len(c.Presets) != 4 {
		t.Fatalf("LoadDefault without a file = %+v, %v; want the built-ins", c, err)
	}
	path := filepath.Join(xdg, "flightdeck", "config.toml")
	if _, err := Load(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file given explicitly: %v, want fs.ErrNotExist", err)
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("[defaults]\nprofile = \"nccl-debug\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = LoadDefault()
	if err != nil || c.Path != path || c.Defaults.Profile != "nccl-debug" {
		t.Errorf("LoadDefault = %+v, %v", c, err)
	}

	if err := os.WriteFile(path, []byte("[defaults]\nprofile = \"nope\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadDefault()
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: defaults.profile: unknown profile") {
		t.Errorf("LoadDefault of a bad file: %v", err)
	}
}
