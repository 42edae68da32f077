package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
)

// The file's shape. Decoding into it with DisallowUnknownFields reports
// unknown keys.
type (
	fileConfig struct {
		Defaults fileDefaults           `toml:"defaults"`
		Hosts    map[string]fileHost    `toml:"hosts"`
		Profiles map[string]fileProfile `toml:"profiles"`
		Presets  map[string]filePreset  `toml:"presets"`
	}
	fileDefaults struct {
		Preset  string `toml:"preset"`
		Profile string `toml:"profile"`
		Model   string `toml:"model"`
		Draft   string `toml:"draft_model"`
		TP      int    `toml:"tp"`
		Port    int    `toml:"port"`
		LogDir  string `toml:"log_dir"`
	}
	fileHost struct {
		Target  string `toml:"target"`
		LogDir  string `toml:"log_dir"`
		Repo    string `toml:"repo"`
		Workdir string `toml:"workdir"`
		Preset  string `toml:"preset"`
		Profile string `toml:"profile"`
		Model   string `toml:"model"`
		Draft   string `toml:"draft_model"`
		TP      int    `toml:"tp"`
		Port    int    `toml:"port"`
	}
	fileProfile struct {
		Extends string         `toml:"extends"`
		Env     map[string]any `toml:"env"` // strings; integers and booleans are accepted and converted
		Unset   []string       `toml:"unset"`
	}
	filePreset struct {
		Command string   `toml:"command"`
		Server  string   `toml:"server"`
		Extra   []string `toml:"extra"`
		// Versions: version probe name → shell command.
		Versions map[string]string `toml:"versions"`
	}
)

// Parse parses a configuration file's content; name is the file name used
// in error messages (Error.File, Host.File, Profile.File, Preset.File). The
// result holds the built-ins (see Builtins) with the file's defaults, hosts,
// profiles and presets over them: a profile or preset with a built-in's name
// replaces it.
//
// It checks everything it can: TOML syntax, unknown keys, value types,
// that preset commands and extra entries split with SplitWords and use only
// the placeholders {model}, {tp}, {port}, {host}, {draft_model}, that
// servers are "sglang" or "vllm", that version probes have usable names and
// one-line commands, that profile variables pass ValidateEnv,
// that extends names a profile and forms no cycle, that the presets and
// profiles named by [defaults] and the hosts exist, and that tp is 0 or
// 1..1024 and port 0 or 1..65535. An env value written as a TOML integer or
// boolean is taken as its text ("256", "true"); other non-strings are
// errors. Any problem gives a nil *Config and an
// errors.Join of one *Error per problem, sorted by line, so that printing it
// shows every problem on a line of its own. A syntax or type error stops
// decoding, so it is reported alone.
func Parse(name string, data []byte) (*Config, error) {
	var f fileConfig
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var errs []*Error
	unknownIn := map[string]bool{} // tables with unknown keys
	if err := dec.Decode(&f); err != nil {
		var strict *toml.StrictMissingError
		var de *toml.DecodeError
		switch {
		case errors.As(err, &strict):
			for _, e := range strict.Errors {
				line, col := e.Position()
				if k := e.Key(); len(k) > 0 {
					unknownIn[pathKey(k[:len(k)-1])] = true
				}
				errs = append(errs, &Error{File: name, Line: line, Col: col, Key: keyString(e.Key()...), Msg: unknownKeyMsg(e.Key())})
			}
		case errors.As(err, &de):
			line, col := de.Position()
			return nil, joinSorted([]*Error{{File: name, Line: line, Col: col, Key: keyString(de.Key()...), Msg: decodeMsg(de)}})
		default:
			return nil, joinSorted([]*Error{{File: name, Msg: err.Error()}})
		}
	}
	p := parser{name: name, idx: indexKeys(data), c: Builtins(), errs: errs, unknownIn: unknownIn}
	p.build(&f)
	p.validate()
	if len(p.errs) > 0 {
		return nil, joinSorted(p.errs)
	}
	return p.c, nil
}

// typeErrRE matches go-toml's type mismatch message, which names Go types.
// (or, for a map's values, just the type: "into string").
var typeErrRE = regexp.MustCompile(`^cannot decode TOML (.+?) into (?:.* of type )?(.+)$`)

// decodeMsg rewrites a decode error's message in the file's terms.
func decodeMsg(de *toml.DecodeError) string {
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	m := typeErrRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	var want string
	switch t := m[2]; {
	case t == "int":
		want = "an integer"
	case t == "string":
		want = "a string"
	case strings.HasPrefix(t, "[]"):
		want = "an array of strings"
	default:
		want = "a table"
	}
	return fmt.Sprintf("expected %s, got a TOML %s", want, m[1])
}

// parser turns a decoded file into a Config and collects problems.
type parser struct {
	name string
	idx  *keyIndex
	c    *Config
	errs []*Error
	// profiles and presets are the names the file defines, sorted.
	profiles, presets []string
	unknownIn         map[string]bool // pathKey of each table with an unknown key
}

func (p *parser) errorf(parts []string, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.name, Line: p.idx.line(parts...), Key: keyString(parts...), Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) build(f *fileConfig) {
	d := &p.c.Defaults
	if f.Defaults.Preset != "" {
		d.Preset = f.Defaults.Preset
	}
	if f.Defaults.Profile != "" {
		d.Profile = f.Defaults.Profile
	}
	if f.Defaults.LogDir != "" {
		d.LogDir = f.Defaults.LogDir
	}
	d.Model, d.DraftModel, d.TP, d.Port = f.Defaults.Model, f.Defaults.Draft, f.Defaults.TP, f.Defaults.Port

	for name, h := range f.Hosts {
		p.c.Hosts[name] = Host{
			Name: name, Target: h.Target, LogDir: h.LogDir, Repo: h.Repo, Workdir: h.Workdir,
			Preset: h.Preset, Profile: h.Profile, Model: h.Model, DraftModel: h.Draft, TP: h.TP, Port: h.Port,
			File: p.name, Line: p.idx.line("hosts", name),
		}
	}
	p.profiles = slices.Sorted(maps.Keys(f.Profiles))
	for _, name := range p.profiles {
		fp := f.Profiles[name]
		env := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(fp.Env)) {
			switch v := fp.Env[k].(type) {
			case string:
				env[k] = v
			case int64:
				env[k] = strconv.FormatInt(v, 10)
			case bool:
				env[k] = strconv.FormatBool(v)
			default:
				p.errorf([]string{"profiles", name, "env", k}, "expected a string, got %s (write the value in quotes)", tomlKind(v))
			}
		}
		p.c.Profiles[name] = Profile{Name: name, Extends: fp.Extends, Env: env, Unset: fp.Unset,
			File: p.name, Line: p.idx.line("profiles", name)}
	}
	p.presets = slices.Sorted(maps.Keys(f.Presets))
	for _, name := range p.presets {
		fp := f.Presets[name]
		server := fp.Server
		if server == "" {
			server = ServerSGLang
			if strings.Contains(fp.Command, "vllm") {
				server = ServerVLLM
			}
		}
		p.c.Presets[name] = Preset{Name: name, Command: fp.Command, Server: server, Extra: fp.Extra, Versions: fp.Versions,
			File: p.name, Line: p.idx.line("presets", name)}
	}
}

// tomlKind names the TOML type of a decoded value.
func tomlKind(v any) string {
	switch v.(type) {
	case float64:
		return "a float"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

func (p *parser) validate() {
	d := p.c.Defaults
	checkRef(p, []string{"defaults", "preset"}, "preset", d.Preset, p.c.Presets)
	checkRef(p, []string{"defaults", "profile"}, "profile", d.Profile, p.c.Profiles)
	p.checkRanges([]string{"defaults"}, d.TP, d.Port)

	for _, name := range slices.Sorted(maps.Keys(p.c.Hosts)) {
		h := p.c.Hosts[name]
		if h.Preset != "" {
			checkRef(p, []string{"hosts", name, "preset"}, "preset", h.Preset, p.c.Presets)
		}
		if h.Profile != "" {
			checkRef(p, []string{"hosts", name, "profile"}, "profile", h.Profile, p.c.Profiles)
		}
		p.checkRanges([]string{"hosts", name}, h.TP, h.Port)
	}

	for _, name := range p.profiles {
		p.checkProfile(p.c.Profiles[name])
	}
	p.checkCycles()

	for _, name := range p.presets {
		ps := p.c.Presets[name]
		switch {
		case strings.TrimSpace(ps.Command) == "":
			// In a table with an unknown key, that key is most likely the
			// misspelt command, and its own message says so.
			if !p.unknownIn[pathKey([]string{"presets", name})] {
				p.errorf([]string{"presets", name, "command"}, "command is required")
			}
		default:
			if msg := checkTemplate(ps.Command); msg != "" {
				p.errorf([]string{"presets", name, "command"}, "%s", msg)
			}
		}
		if ps.Server != ServerSGLang && ps.Server != ServerVLLM {
			p.errorf([]string{"presets", name, "server"}, "unknown server %q (known: %s, %s)", ps.Server, ServerSGLang, ServerVLLM)
		}
		for _, e := range ps.Extra {
			if msg := checkTemplate(e); msg != "" {
				p.errorf([]string{"presets", name, "extra"}, "%q: %s", e, msg)
			}
		}
		p.checkVersions(name, ps.Versions)
	}
}

// checkRef reports name at key when m has no entry for it.
func checkRef[V any](p *parser, key []string, kind, name string, m map[string]V) {
	if _, ok := m[name]; !ok {
		p.errorf(key, "unknown %s %q (%s)", kind, name, known(m))
	}
}

func (p *parser) checkRanges(table []string, tp, port int) {
	if tp != 0 && (tp < 1 || tp > 1024) {
		p.errorf(append(slices.Clone(table), "tp"), "tp %d is out of range (1..1024, or 0 to let flightdeck decide)", tp)
	}
	if port != 0 && (port < 1 || port > 65535) {
		p.errorf(append(slices.Clone(table), "port"), "port %d is out of range (1..65535)", port)
	}
}

func (p *parser) checkProfile(pr Profile) {
	if pr.Extends != "" {
		checkRef(p, []string{"profiles", pr.Name, "extends"}, "profile", pr.Extends, p.c.Profiles)
	}
	for _, k := range slices.Sorted(maps.Keys(pr.Env)) {
		key := []string{"profiles", pr.Name, "env", k}
		if msg := checkEnvName(k); msg != "" {
			p.errorf(key, "%s", msg)
		}
		if msg := checkEnvValue(k, pr.Env[k]); msg != "" {
			p.errorf(key, "%s", msg)
		}
	}
	for _, u := range pr.Unset {
		key := []string{"profiles", pr.Name, "unset"}
		if msg := checkEnvName(u); msg != "" {
			p.errorf(key, "%s", msg)
		} else if _, ok := pr.Env[u]; ok {
			p.errorf(key, "%s is both set in env and unset", u)
		}
	}
}

// checkCycles reports each extends cycle once, at the extends key of its
// member that comes first in the file. Only the file's profiles can extend,
// so only they can be in a cycle.
func (p *parser) checkCycles() {
	reported := map[string]bool{}
	for _, start := range p.profiles {
		var path []string
		at := map[string]int{}
		for n := start; n != ""; n = p.c.Profiles[n].Extends {
			if i, ok := at[n]; ok {
				cycle := path[i:]
				id := pathKey(slices.Sorted(slices.Values(cycle)))
				if !reported[id] {
					reported[id] = true
					p.reportCycle(cycle)
				}
				break
			}
			if _, ok := p.c.Profiles[n]; !ok {
				break // reported by checkProfile
			}
			at[n] = len(path)
			path = append(path, n)
		}
	}
}

func (p *parser) reportCycle(cycle []string) {
	first := 0
	for i, n := range cycle {
		if p.c.Profiles[n].Line < p.c.Profiles[cycle[first]].Line {
			first = i
		}
	}
	names := append(slices.Clone(cycle[first:]), cycle[:first]...)
	names = append(names, names[0])
	p.errorf([]string{"profiles", names[0], "extends"}, "extends cycle: %s", strings.Join(names, " → "))
}
