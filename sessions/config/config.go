// Package config reads flightdeck's configuration: defaults, hosts,
// environment profiles and launch presets, from a TOML file at
// $XDG_CONFIG_HOME/flightdeck/config.toml (~/.config/flightdeck/config.toml
// when XDG_CONFIG_HOME is unset). Built-in profiles and presets are always
// present; the file adds to them and may replace them by name.
//
// Every problem in a file (syntax, unknown keys, wrong types, unknown
// presets or profiles, bad environment variables, bad placeholders, extends
// cycles) is reported as an *Error carrying the file, line and key, and all
// of them are reported at once, one per line of the joined error.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Server kinds: they choose the log format and readiness rules.
const (
	ServerSGLang = "sglang" // SGLang's launch_server
	ServerVLLM   = "vllm"   // vLLM's OpenAI-compatible server
)

// DefaultPort is the port a server kind listens on when nothing configures
// one: 30000 for sglang, 8000 for vllm, 0 for an unknown kind.
func DefaultPort(server string) int {
	switch server {
	case ServerSGLang:
		return 30000
	case ServerVLLM:
		return 8000
	}
	return 0
}

// Config is a loaded configuration.
type Config struct {
	Path     string // the file loaded; "" when only built-ins
	Defaults Defaults
	Hosts    map[string]Host    // as written in the file; use Config.Host for effective values
	Profiles map[string]Profile // built-ins merged with the file's (the file's win)
	Presets  map[string]Preset  // built-ins merged with the file's (the file's win)
}

// Defaults apply when a host or the command line says nothing. After Parse,
// Preset, Profile and LogDir are never empty (built-in defaults: "sglang",
// "none", "~/.flightdeck/logs").
type Defaults struct {
	Preset  string // launch preset name
	Profile string // environment profile name
	Model   string // "" when not configured
	// DraftModel fills {draft_model}: the EAGLE draft model of the
	// sglang-eagle3 preset; "" when not configured.
	DraftModel string
	TP         int    // tensor-parallel size; 0: the caller decides (e.g. the number of GPUs)
	Port       int    // 0: DefaultPort of the preset's server kind
	LogDir     string // on the GPU host: per-launch logs and the pidfile; may start with "~/"
}

// Host is one [hosts.NAME] table. Empty strings and zero numbers mean "not
// set here"; Config.Host fills them from Defaults.
type Host struct {
	Name    string // the alias: the table's name
	Target  string // SSH target (user@host[:port] or ~/.ssh/config alias) or "local"
	LogDir  string
	Repo    string // the server's git checkout on the host
	Workdir string // where the server is launched; "" after Config.Host: the login directory
	Preset  string
	Profile string
	Model   string
	// DraftModel fills {draft_model} (EAGLE draft model).
	DraftModel string
	TP         int
	Port       int
	File       string // the file it came from; "" when synthesised
	Line       int    // line of its table in File; 0 when synthesised
}

// Profile is a named set of environment variables for the server process.
// A file's profile with the name of a built-in one replaces it.
type Profile struct {
	Name    string
	Extends string            // parent profile, "" for none
	Env     map[string]string // variables set by this profile (over the parent's)
	Unset   []string          // variables of the parent's to drop
	Builtin bool
	File    string // "" for built-ins
	Line    int    // line of its table in File; 0 for built-ins
}

// Preset is a named launch command. A file's preset with the name of a
// built-in one replaces it.
type Preset struct {
	Name    string
	Command string   // split with SplitWords; may contain {placeholders}
	Server  string   // ServerSGLang or ServerVLLM
	Extra   []string // each entry split with SplitWords and appended; placeholders allowed
	// Versions are the [presets.NAME.versions] table as written: version
	// probe name → shell command ("" turns a built-in probe off). Use
	// Config.VersionProbes for the effective probes.
	Versions map[string]string
	Builtin  bool
	File     string // "" for built-ins
	Line     int    // line of its table in File; 0 for built-ins
}

// DefaultPort is DefaultPort(p.Server).
func (p Preset) DefaultPort() int { return DefaultPort(p.Server) }

// DefaultPath returns where the configuration file lives:
// $XDG_CONFIG_HOME/flightdeck/config.toml, or ~/.config/flightdeck/config.toml
// when XDG_CONFIG_HOME is unset or not absolute (as the XDG spec says). It
// fails only when the home directory is needed and unknown.
func DefaultPath() (string, error) {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "flightdeck", "config.toml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("config: no configuration directory: %w", err)
	}
	return filepath.Join(home, ".config", "flightdeck", "config.toml"), nil
}

// Load reads and parses the file at path. A file that cannot be read
// (missing included) is an error from the os package (errors.Is(err,
// fs.ErrNotExist) for a missing one); problems in its content are reported
// as by Parse, with path as the file name.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	c.Path = path
	return c, nil
}

// LoadDefault loads the file at DefaultPath. A missing file is no error: the
// result is Builtins() (with Path "").
func LoadDefault() (*Config, error) {
	path, err := DefaultPath()
	if err != nil {
		return nil, err
	}
	c, err := Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Builtins(), nil
	}
	return c, err
}

// Host returns the effective settings for alias: the configured host, or
// one synthesised with Target alias (so "local" and "user@host:port" work
// without a table), with every field the host leaves empty filled from
// Defaults. Workdir falls back to Repo, and stays "" (the login directory)
// when both are empty.
func (c *Config) Host(alias string) Host {
	h, ok := c.Hosts[alias]
	if !ok {
		h = Host{}
	}
	h.Name = alias
	if h.Target == "" {
		h.Target = alias
	}
	if h.LogDir == "" {
		h.LogDir = c.Defaults.LogDir
	}
	if h.Workdir == "" {
		h.Workdir = h.Repo
	}
	if h.Preset == "" {
		h.Preset = c.Defaults.Preset
	}
	if h.Profile == "" {
		h.Profile = c.Defaults.Profile
	}
	if h.Model == "" {
		h.Model = c.Defaults.Model
	}
	if h.DraftModel == "" {
		h.DraftModel = c.Defaults.DraftModel
	}
	if h.TP == 0 {
		h.TP = c.Defaults.TP
	}
	if h.Port == 0 {
		h.Port = c.Defaults.Port
	}
	return h
}

// ResolveProfile returns the variables profile name sets: its ancestors'
// (following extends, root first), each child first dropping its Unset names
// from what it inherits and then setting its Env. The map is new; the caller
// may change it. "" resolves to no variables. An unknown name is an *Error
// listing the known profiles; a cycle is an *Error too (Parse rejects both,
// so they only happen with a Config built by hand).
func (c *Config) ResolveProfile(name string) (map[string]string, error) {
	if name == "" {
		return map[string]string{}, nil
	}
	var chain []string // names, name first
	for n := name; n != ""; n = c.Profiles[n].Extends {
		if _, ok := c.Profiles[n]; !ok {
			e := &Error{Msg: fmt.Sprintf("unknown profile %q (%s)", n, known(c.Profiles))}
			if len(chain) > 0 {
				parent := chain[len(chain)-1]
				e.File, e.Line, e.Key = c.Profiles[parent].File, c.Profiles[parent].Line, keyString("profiles", parent, "extends")
			}
			return nil, e
		}
		if i := slices.Index(chain, n); i >= 0 {
			last := chain[len(chain)-1]
			cycle := append(chain[i:], n)
			return nil, &Error{File: c.Profiles[last].File, Line: c.Profiles[last].Line, Key: keyString("profiles", last, "extends"),
				Msg: "extends cycle: " + strings.Join(cycle, " → ")}
		}
		chain = append(chain, n)
	}
	env := map[string]string{}
	for _, n := range slices.Backward(chain) {
		for _, u := range c.Profiles[n].Unset {
			delete(env, u)
		}
		maps.Copy(env, c.Profiles[n].Env)
	}
	return env, nil
}

// Preset returns the preset called name, or an *Error listing the known
// presets.
func (c *Config) Preset(name string) (Preset, error) {
	p, ok := c.Presets[name]
	if !ok {
		return Preset{}, &Error{Msg: fmt.Sprintf("unknown preset %q (%s)", name, known(c.Presets))}
	}
	return p, nil
}

// known lists a map's names, sorted, for "unknown X" messages.
func known[V any](m map[string]V) string {
	if len(m) == 0 {
		return "none are defined"
	}
	return "known: " + strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// PresetNames lists the presets (built-in and the file's), sorted.
func (c *Config) PresetNames() []string { return slices.Sorted(maps.Keys(c.Presets)) }

// ProfileNames lists the env profiles (built-in and the file's), sorted.
func (c *Config) ProfileNames() []string { return slices.Sorted(maps.Keys(c.Profiles)) }
