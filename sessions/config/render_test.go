package config

import (
	"slices"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		command string
		extra   []string // the preset's
		vals    map[string]string
		args    []string // the caller's
		want    []string
	}{
		{
			name:    "values arrive verbatim as single words",
			command: "run --model-path {model} --port {port} --tp {tp}",
			vals:    map[string]string{"model": "/models/a b/it's \"q\"", "port": "$(rm -rf /)", "tp": "`id`;*"},
			want:    []string{"run", "--model-path", `/models/a b/it's "q"`, "--port", "$(rm -rf /)", "--tp", "`id`;*"},
		},
		{
			name:    "several placeholders in a word, literal braces",
			command: "run --x={model}:{port} {{x}} {{{model}}} '{{\"a\": 1}}'",
			vals:    map[string]string{"model": "m", "port": "1"},
			want:    []string{"run", "--x=m:1", "{x}", "{m}", `{"a": 1}`},
		},
		{
			name:    "a value is not scanned for placeholders",
			command: "run {model}",
			vals:    map[string]string{"model": "{port}}{{", "port": "1"},
			want:    []string{"run", "{port}}{{"},
		},
		{
			name:    "quoted placeholders and an empty word",
			command: `run "--name={model} x" '' {host}`,
			vals:    map[string]string{"model": "m", "host": "0.0.0.0"},
			want:    []string{"run", "--name=m x", "", "0.0.0.0"},
		},
		{
			name:    "preset extra is split and rendered, caller extra is appended as is",
			command: "run",
			extra:   []string{"--enable-metrics", "--served-model-name {model}", "'--a b'"},
			vals:    map[string]string{"model": "m"},
			args:    []string{"--x", "{model}", "$(y) z"},
			want:    []string{"run", "--enable-metrics", "--served-model-name", "m", "--a b", "--x", "{model}", "$(y) z"},
		},
		{
			name:    "values nobody asked for are ignored",
			command: "run",
			vals:    map[string]string{"model": ""},
			want:    []string{"run"},
		},
	}
	for _, tt := range tests {
		p := Preset{Name: "p", Command: tt.command, Extra: tt.extra, Server: ServerSGLang}
		got, err := p.Render(tt.vals, tt.args)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestRenderMissing(t *testing.T) {
	c, err := Parse("config.toml", []byte(`# presets
[presets.sglang-fp8]
command = "python3 -m sglang.launch_server --model-path {model} --tp-size {tp} --port {port} --quantization fp8"
extra = ["--draft {draft_model}"]
`))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Presets["sglang-fp8"]
	_, err = p.Render(map[string]string{"tp": "8", "port": "", "draft_model": "/d"}, nil)
	want := []string{
		"config.toml:2: presets.sglang-fp8.command: placeholder {model} has no value (set model in [defaults] or the host, or pass --model; in the cockpit's launch form: model)",
		"config.toml:2: presets.sglang-fp8.command: placeholder {port} has no value (set port in [defaults] or the host, or pass --port; in the cockpit's launch form: port)",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
	if errs := problems(t, err); len(errs) != 2 || errs[0].Line != 2 || errs[0].File != "config.toml" {
		t.Errorf("problems %v", errs)
	}
	_, err = p.Render(map[string]string{"model": "m", "tp": "8", "port": "1"}, nil)
	if err == nil || err.Error() != "config.toml:2: presets.sglang-fp8.extra: placeholder {draft_model} has no value (set draft_model in [defaults] or the host, or pass --draft-model; in the cockpit's launch form: draft)" {
		t.Errorf("missing draft_model in extra: %v", err)
	}

	// A built-in has no file or line.
	_, err = Builtins().Presets["sglang-eagle3"].Render(map[string]string{"model": "m", "tp": "8", "port": "1"}, nil)
	if err == nil || err.Error() != "presets.sglang-eagle3.command: placeholder {draft_model} has no value (set draft_model in [defaults] or the host, or pass --draft-model; in the cockpit's launch form: draft)" {
		t.Errorf("built-in: %v", err)
	}
}

func TestRenderBadPreset(t *testing.T) {
	// Parse refuses these; a Preset built by hand can still hold them.
	tests := []struct{ command, msg string }{
		{"run; x", `column 4: ";" needs a shell`},
		{"run {model", "{ without a closing }"},
		{"run model}", "lone }"},
		{"run {}", "empty placeholder"},
	}
	_, err := Preset{Name: "p", Command: "run {model}"}.Render(map[string]string{"model": "a\x00b"}, nil)
	if err == nil || err.Error() != "presets.p.command: the value of {model} contains a NUL byte" {
		t.Errorf("NUL in a value: %v", err)
	}
	for _, tt := range tests {
		_, err := Preset{Name: "p", Command: tt.command}.Render(map[string]string{"model": "m"}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.msg) || !strings.HasPrefix(err.Error(), "presets.p.command: ") {
			t.Errorf("Render(%q): %v, want %q", tt.command, err, tt.msg)
		}
	}
}
