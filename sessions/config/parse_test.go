package config

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// problems unpacks Parse's error into its *Errors, failing the test when
// it holds anything else.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		e, ok := err.(*Error)
		if !ok {
			t.Fatalf("error %T %v is not a *Error", err, err)
		}
		out = append(out, e)
	}
	walk(err)
	return out
}

func TestExampleParses(t *testing.T) {
	c, err := Parse("example.toml", []byte(Example))
	if err != nil {
		t.Fatalf("Example: %v", err)
	}
	want := Builtins().Defaults
	if c.Defaults != want {
		t.Errorf("Example defaults = %+v, want the built-in ones %+v", c.Defaults, want)
	}
	if len(c.Hosts) != 0 {
		t.Errorf("Example defines hosts %v, want none", slices.Collect(maps.Keys(c.Hosts)))
	}
}

// commentedKey matches the commented-out TOML in Example, as opposed to its
// explanations.
var commentedKey = regexp.MustCompile(`^# ?(\[[A-Za-z]|[A-Za-z0-9_-]+ *=)`)

func TestExampleUncommented(t *testing.T) {
	var lines []string
	uncommented := 0
	for line := range strings.Lines(Example) {
		if commentedKey.MatchString(line) {
			line = strings.TrimPrefix(strings.TrimPrefix(line, "#"), " ")
			uncommented++
		}
		lines = append(lines, line)
	}
	if uncommented < 20 {
		t.Fatalf("uncommented only %d lines of Example", uncommented)
	}
	src := strings.Join(lines, "")
	c, err := Parse("example.toml", []byte(src))
	if err != nil {
		t.Fatalf("Example uncommented: %v\n%s", err, src)
	}
	h := c.Host("gpu-box")
	if h.Target != "root@10.0.0.7" || h.Preset != "sglang-fp8" || h.Profile != "my-nccl" || h.TP != 8 || h.Port != 30001 || h.Line == 0 {
		t.Errorf("host gpu-box = %+v", h)
	}
	env, err := c.ResolveProfile(h.Profile)
	if err != nil {
		t.Fatal(err)
	}
	if env["NCCL_NTHREADS"] != "256" || env["NCCL_PROTO"] != "LL" || env["NCCL_DEBUG"] != "WARN" {
		t.Errorf("profile my-nccl = %v", env)
	}
	if _, ok := env["NCCL_BUFFSIZE"]; ok {
		t.Errorf("profile my-nccl keeps the unset NCCL_BUFFSIZE: %v", env)
	}
	p, err := c.Preset(h.Preset)
	if err != nil {
		t.Fatal(err)
	}
	argv, err := p.Render(map[string]string{"model": h.Model, "tp": "8", "port": "30001"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv, " "); !strings.Contains(got, "--model-path /shared/kimi-k2.5-int4 ") || !strings.HasSuffix(got, "--quantization fp8 --enable-metrics") {
		t.Errorf("sglang-fp8 renders %q", got)
	}
}

func TestBuiltins(t *testing.T) {
	c := Builtins()
	for _, name := range []string{"none", "nccl-ll-ring", "nccl-debug"} {
		if p, ok := c.Profiles[name]; !ok || !p.Builtin {
			t.Errorf("built-in profile %q: %+v, %v", name, p, ok)
		}
	}
	servers := map[string]string{"sglang": ServerSGLang, "sglang-eagle3": ServerSGLang, "vllm": ServerVLLM, "sim": ServerSGLang}
	for name, server := range servers {
		p, err := c.Preset(name)
		if err != nil || !p.Builtin || p.Server != server {
			t.Errorf("built-in preset %q = %+v, %v; want server %s", name, p, err, server)
		}
		if msg := checkTemplate(p.Command); msg != "" {
			t.Errorf("built-in preset %q: %s", name, msg)
		}
	}
	if len(c.Presets) != len(servers) || len(c.Profiles) != 3 {
		t.Errorf("built-ins: %d presets, %d profiles", len(c.Presets), len(c.Profiles))
	}
	env, err := c.ResolveProfile("nccl-ll-ring")
	want := map[string]string{"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring", "NCCL_P2P_LEVEL": "SYS",
		"NCCL_MAX_NCHANNELS": "16", "NCCL_BUFFSIZE": "16777216", "NCCL_NTHREADS": "512"}
	if err != nil || !maps.Equal(env, want) {
		t.Errorf("nccl-ll-ring = %v, %v", env, err)
	}
	// Changing one Config's built-ins leaves the next one alone.
	env["X"] = "y"
	c.Profiles["nccl-debug"].Env["X"] = "y"
	if _, ok := Builtins().Profiles["nccl-debug"].Env["X"]; ok {
		t.Error("Builtins shares its maps between calls")
	}
	argv, err := c.Presets["vllm"].Render(map[string]string{"model": "/m", "tp": "2", "port": "8000"}, nil)
	if err != nil || strings.Join(argv, " ") != "vllm serve /m --tensor-parallel-size 2 --port 8000 --host 127.0.0.1" {
		t.Errorf("vllm renders %q, %v", argv, err)
	}
	if DefaultPort(ServerSGLang) != 30000 || DefaultPort(ServerVLLM) != 8000 || c.Presets["vllm"].DefaultPort() != 8000 || DefaultPort("x") != 0 {
		t.Error("DefaultPort")
	}
}

const profilesFile = `
[profiles.base]
extends = "nccl-ll-ring"
env = { NCCL_NTHREADS = "256", NCCL_DEBUG = "WARN" }
unset = ["NCCL_BUFFSIZE"]

[profiles.child]
extends = "base"
env.NCCL_DEBUG = "INFO"
env.CUDA_LAUNCH_BLOCKING = 1
unset = ["NCCL_ALGO", "NCCL_DEBUG_SUBSYS"]

[profiles.nccl-debug]   # replaces the built-in
env = { NCCL_DEBUG = "TRACE" }
`

func TestResolveProfile(t *testing.T) {
	c, err := Parse("p.toml", []byte(profilesFile))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want map[string]string
	}{
		{"none", map[string]string{}},
		{"", map[string]string{}},
		{"base", map[string]string{"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring", "NCCL_P2P_LEVEL": "SYS",
			"NCCL_MAX_NCHANNELS": "16", "NCCL_NTHREADS": "256", "NCCL_DEBUG": "WARN"}},
		{"child", map[string]string{"NCCL_PROTO": "LL", "NCCL_P2P_LEVEL": "SYS",
			"NCCL_MAX_NCHANNELS": "16", "NCCL_NTHREADS": "256", "NCCL_DEBUG": "INFO", "CUDA_LAUNCH_BLOCKING": "1"}},
		{"nccl-debug", map[string]string{"NCCL_DEBUG": "TRACE"}},
	}
	for _, tt := range tests {
		got, err := c.ResolveProfile(tt.name)
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("ResolveProfile(%q) = %v, %v\nwant %v", tt.name, got, err, tt.want)
		}
	}
	if p := c.Profiles["nccl-debug"]; p.Builtin || p.Line != 13 || p.File != "p.toml" {
		t.Errorf("overriding profile = %+v, want Builtin false, p.toml line 13", p)
	}
	if p := c.Profiles["child"]; p.Line != 7 || p.Extends != "base" {
		t.Errorf("child = %+v", p)
	}

	_, err = c.ResolveProfile("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown profile "nope" (known: base, child, nccl-debug, nccl-ll-ring, none)`) {
		t.Errorf("unknown profile: %v", err)
	}
	// Parse refuses these; a Config built by hand can still have them.
	c.Profiles["x"] = Profile{Name: "x", Extends: "gone", File: "p.toml", Line: 3}
	if _, err := c.ResolveProfile("x"); err == nil || !strings.HasPrefix(err.Error(), `p.toml:3: profiles.x.extends: unknown profile "gone"`) {
		t.Errorf("unknown parent: %v", err)
	}
	c.Profiles["base"] = Profile{Name: "base", Extends: "child"}
	if _, err := c.ResolveProfile("child"); err == nil || !strings.Contains(err.Error(), "extends cycle: child → base → child") {
		t.Errorf("cycle: %v", err)
	}
}

func TestPresetLookup(t *testing.T) {
	c, err := Parse("p.toml", []byte(`
[presets.sglang]
command = "python3 -m sglang.launch_server --model-path {model}"
[presets.v]
command = "/opt/venv/bin/vllm serve {model}"
`))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Presets["sglang"]; p.Builtin || p.Line != 2 || strings.Contains(p.Command, "trust-remote-code") {
		t.Errorf("user preset did not replace the built-in: %+v", p)
	}
	if p := c.Presets["v"]; p.Server != ServerVLLM {
		t.Errorf("server of a vllm command = %q, want vllm", p.Server)
	}
	_, err = c.Preset("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown preset "nope" (known: sglang, sglang-eagle3, sim, v, vllm)`) {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestHost(t *testing.T) {
	c, err := Parse("h.toml", []byte(`
[defaults]
preset = "vllm"
model = "/models/a"
tp = 4
port = 9000
log_dir = "/var/log/fd"

[hosts.gpu-box]
target = "root@10.0.0.7"
repo = "/root/sglang"
preset = "sglang"
tp = 8

[hosts.bare]
workdir = "/w"
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		alias string
		want  Host
	}{
		{"gpu-box", Host{Name: "gpu-box", Target: "root@10.0.0.7", LogDir: "/var/log/fd", Repo: "/root/sglang", Workdir: "/root/sglang",
			Preset: "sglang", Profile: "none", Model: "/models/a", TP: 8, Port: 9000, File: "h.toml", Line: 9}},
		{"bare", Host{Name: "bare", Target: "bare", LogDir: "/var/log/fd", Workdir: "/w",
			Preset: "vllm", Profile: "none", Model: "/models/a", TP: 4, Port: 9000, File: "h.toml", Line: 15}},
		{"local", Host{Name: "local", Target: "local", LogDir: "/var/log/fd", Preset: "vllm", Profile: "none", Model: "/models/a", TP: 4, Port: 9000}},
		{"me@h:2222", Host{Name: "me@h:2222", Target: "me@h:2222", LogDir: "/var/log/fd", Preset: "vllm", Profile: "none", Model: "/models/a", TP: 4, Port: 9000}},
	}
	for _, tt := range tests {
		if got := c.Host(tt.alias); got != tt.want {
			t.Errorf("Host(%q) =\n%+v\nwant\n%+v", tt.alias, got, tt.want)
		}
	}
	if h := Builtins().Host("x"); h.LogDir != "~/.flightdeck/logs" || h.Preset != "sglang" || h.Profile != "none" || h.Port != 0 || h.TP != 0 {
		t.Errorf("Builtins().Host = %+v", h)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int    // col -1: not checked
		key       string // "" : not checked
		msg       string // substring
	}{
		{"syntax: table header", "[defaults\npreset = \"x\"\n", 1, 10, "", "expected ']'"},
		{"syntax: unterminated string", "[defaults]\n\npreset = \"sglang\n", 3, -1, "", ""},
		{"syntax: duplicate key", "[defaults]\ntp = 1\ntp = 2\n", 3, 1, "", "already defined"},
		{"unknown key", "[presets.p]\ncomand = \"x {model}\"\n", 2, 1, "presets.p.comand", `unknown key "comand" (did you mean "command"?)`},
		{"unknown key, no near match", "[hosts.h]\n  zzzzzz = 1\n", 2, 3, "hosts.h.zzzzzz", "known: target, log_dir"},
		{"unknown table", "\n[default]\npreset = \"x\"\n", 2, 2, "default", `did you mean "defaults"?`},
		{"wrong type", "[defaults]\ntp = \"8\"\n", 2, 6, "defaults.tp", "expected an integer, got a TOML string"},
		{"wrong type: array", "[presets.p]\ncommand = \"a\"\nextra = \"--x\"\n", 3, -1, "presets.p.extra", "expected an array of strings"},
		{"host: unknown preset", "[hosts.a]\ntarget = \"x\"\n\npreset = \"sglang-fp9\"\n", 4, 0, "hosts.a.preset", `unknown preset "sglang-fp9" (known: sglang, sglang-eagle3, sim, vllm)`},
		{"host: unknown profile", "[hosts.a]\nprofile = \"nope\"\n", 2, 0, "hosts.a.profile", `unknown profile "nope"`},
		{"defaults: unknown preset", "# c\n[defaults]\npreset = \"nope\"\n", 3, 0, "defaults.preset", `unknown preset "nope"`},
		{"quoted host name", "[hosts.\"10.0.0.7\"]\npreset = \"nope\"\n", 2, 0, `hosts."10.0.0.7".preset`, `unknown preset "nope"`},
		{"inline host", "hosts.a = { target = \"t\", preset = \"nope\" }\n", 1, 0, "hosts.a.preset", `unknown preset`},
		{"tp range", "[defaults]\ntp = 2000\n", 2, 0, "defaults.tp", "tp 2000 is out of range"},
		{"tp negative", "[hosts.a]\ntp = -1\n", 2, 0, "hosts.a.tp", "out of range"},
		{"port range", "[hosts.a]\n\nport = 70000\n", 3, 0, "hosts.a.port", "port 70000 is out of range (1..65535)"},
		{"unknown placeholder", "[presets.p]\n\ncommand = \"run {modle}\"\n", 3, 0, "presets.p.command", "unknown placeholder {modle} (known: {model}, {tp}, {port}, {host}, {draft_model}"},
		{"unknown placeholder in extra", "[presets.p]\ncommand = \"run\"\nextra = [\"--a\", \"--x={y}\"]\n", 3, 0, "presets.p.extra", "unknown placeholder {y}"},
		{"lone brace", "[presets.p]\ncommand = \"run {model\"\n", 2, 0, "presets.p.command", "{ without a closing }"},
		{"shell syntax in command", "[presets.p]\ncommand = \"run {model} > /tmp/log\"\n", 2, 0, "presets.p.command", `column 13: the redirection ">" needs a shell`},
		{"command missing", "[presets.p]\nserver = \"vllm\"\n", 1, 0, "presets.p.command", "command is required"},
		{"unknown server", "[presets.p]\ncommand = \"run\"\nserver = \"trtllm\"\n", 3, 0, "presets.p.server", `unknown server "trtllm"`},
		{"env name lower case", "[profiles.p]\nenv = { NCCL_X = \"1\",\n  nccl_proto = \"LL\" }\n", 3, 0, "profiles.p.env.nccl_proto", `invalid environment variable name "nccl_proto"`},
		{"env name digit", "[profiles.p]\n[profiles.p.env]\nOK = \"1\"\n1X = \"1\"\n", 4, 0, "profiles.p.env.1X", `invalid environment variable name "1X"`},
		{"env value newline", "[profiles.p]\nenv.A = \"x\\ny\"\n", 2, 0, "profiles.p.env.A", "value of A contains a newline"},
		{"env value NUL", "[profiles.p]\nenv.A = \"x\\u0000y\"\n", 2, 0, "profiles.p.env.A", "NUL"},
		{"env value CR", "[profiles.p]\nenv.A = \"x\\ry\"\n", 2, 0, "profiles.p.env.A", "carriage return"},
		{"env value float", "[profiles.p]\nenv.A = 1.5\n", 2, 0, "profiles.p.env.A", "expected a string, got a float"},
		{"unset name", "[profiles.p]\nunset = [\"ok\"]\n", 2, 0, "profiles.p.unset", `invalid environment variable name "ok"`},
		{"set and unset", "[profiles.p]\nenv.A = \"1\"\nunset = [\"A\"]\n", 3, 0, "profiles.p.unset", "A is both set in env and unset"},
		{"extends unknown", "[profiles.p]\nextends = \"nccl-ll-rign\"\n", 2, 0, "profiles.p.extends", `unknown profile "nccl-ll-rign"`},
		{"extends self", "[profiles.nccl-debug]\nextends = \"nccl-debug\"\n", 2, 0, "profiles.nccl-debug.extends", "extends cycle: nccl-debug → nccl-debug"},
		{"extends cycle", "[profiles.b]\nextends = \"c\"\n[profiles.a]\nextends = \"b\"\n[profiles.c]\nextends = \"b\"\n", 2, 0, "profiles.b.extends", "extends cycle: b → c → b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Errorf("a config came with the error")
			}
			errs := problems(t, err)
			if len(errs) != 1 {
				t.Fatalf("%d problems, want 1:\n%v", len(errs), err)
			}
			e := errs[0]
			if e.File != "config.toml" || e.Line != tt.line || (tt.col >= 0 && e.Col != tt.col) ||
				(tt.key != "" && e.Key != tt.key) || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("got %+v\nwant line %d col %d key %q msg containing %q", *e, tt.line, tt.col, tt.key, tt.msg)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := `[defaults]
preset = "nope"

[hosts.a]
profile = "nope"
tp = 0
prot = 30000

[profiles.p]
env = { bad_name = "1" }
extends = "q"

[profiles.q]
extends = "p"

[presets.x]
command = "run {what} $(evil)"
`
	_, err := Parse("c.toml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`c.toml:2: defaults.preset: unknown preset "nope" (known: sglang, sglang-eagle3, sim, vllm, x)`,
		`c.toml:5: hosts.a.profile: unknown profile "nope" (known: nccl-debug, nccl-ll-ring, none, p, q)`,
		`c.toml:7:1: hosts.a.prot: unknown key "prot" (did you mean "port"?)`,
		`c.toml:10: profiles.p.env.bad_name: invalid environment variable name "bad_name": names are upper-case letters, digits and _ (like NCCL_PROTO), not starting with a digit`,
		`c.toml:11: profiles.p.extends: extends cycle: p → q → p`,
		`c.toml:17: presets.x.command: column 12: "$(" needs a shell, but the command is an argv, not a shell script (put it in single quotes to pass it literally)`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(problems(t, err)) != len(want) {
		t.Errorf("problems: %d", len(problems(t, err)))
	}
	var first *Error
	if !errors.As(err, &first) || first.Line != 2 {
		t.Errorf("errors.As finds %+v, want the line-2 problem", first)
	}
}

func TestValidateEnv(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string // "" : valid
	}{
		{map[string]string{}, ""},
		{map[string]string{"NCCL_PROTO": "LL", "_X1": "", "A": "spaces and 'quotes' $(x)"}, ""},
		{map[string]string{"nccl_proto": "LL"}, `nccl_proto: invalid environment variable name "nccl_proto"`},
		{map[string]string{"1X": "1"}, `1X: invalid environment variable name "1X"`},
		{map[string]string{"A-B": "1"}, `invalid environment variable name "A-B"`},
		{map[string]string{"": "1"}, "empty environment variable name"},
		{map[string]string{"A": "x\ny"}, "A: value of A contains a newline"},
		{map[string]string{"A": "x\ry"}, "A: value of A contains a carriage return"},
		{map[string]string{"A": "x\x00y"}, "A: value of A contains a NUL byte"},
	}
	for _, tt := range tests {
		err := ValidateEnv(tt.env)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ValidateEnv(%q): %v", tt.env, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ValidateEnv(%q) = %v, want %q", tt.env, err, tt.want)
		}
	}
	err := ValidateEnv(map[string]string{"b": "1", "A": "\n"})
	if got := problems(t, err); len(got) != 2 || got[0].Key != "A" || got[1].Key != "b" {
		t.Errorf("two bad variables: %v", err)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "c.toml", Line: 3, Col: 7, Key: "a.b", Msg: "m"}, "c.toml:3:7: a.b: m"},
		{Error{File: "c.toml", Line: 3, Key: "a.b", Msg: "m"}, "c.toml:3: a.b: m"},
		{Error{File: "c.toml", Msg: "m"}, "c.toml: m"},
		{Error{Line: 3, Col: 1, Msg: "m"}, "3:1: m"},
		{Error{Key: "A", Msg: "m"}, "A: m"},
		{Error{Msg: "m"}, "m"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.e, got, tt.want)
		}
	}
}
