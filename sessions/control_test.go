package sessions

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestControlPlan(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte(`
[profiles.secret]
extends = "nccl-ll-ring"
env = { HF_TOKEN = "hf_abc", NCCL_NTHREADS = "256" }
unset = ["NCCL_BUFFSIZE"]
`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Control{Config: cfg, Target: config.Host{Preset: "sglang", Profile: "none", Model: "/models/Kimi K2.5", TP: 8, LogDir: "/data/logs"}}
	req := c.Request()
	if req.Preset != "sglang" || req.Profile != "none" || req.TP != 8 {
		t.Fatalf("request from the host config: %+v", req)
	}
	req.Profile, req.Extra = "secret", `--served-model-name "kimi k2.5" --chat-template '$(id)'`
	p, err := c.Plan(req)
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/Kimi K2.5", "--tp-size", "8", "--port", "30000",
		"--host", "127.0.0.1", "--trust-remote-code", "--served-model-name", "kimi k2.5", "--chat-template", "$(id)"}
	if !slices.Equal(p.Spec.Argv, wantArgv) {
		t.Errorf("argv %q\nwant %q", p.Spec.Argv, wantArgv)
	}
	if p.Spec.Env["HF_TOKEN"] != "hf_abc" || p.Spec.Env["NCCL_NTHREADS"] != "256" || p.Spec.Env["NCCL_BUFFSIZE"] != "" || p.Spec.Env["NCCL_PROTO"] != "LL" {
		t.Errorf("env %v", p.Spec.Env)
	}
	if strings.Contains(p.CommandLine, "hf_abc") || !strings.Contains(p.CommandLine, "HF_TOKEN='<redacted>'") ||
		!strings.Contains(p.CommandLine, "'/models/Kimi K2.5'") || !strings.Contains(p.CommandLine, "'$(id)'") {
		t.Errorf("command line %q", p.CommandLine)
	}
	if p.EnvDiff != nil {
		t.Errorf("diff without a last launch: %v", p.EnvDiff)
	}
	// Against the last launch (as found in the host's pidfile).
	c.Remember(event.LaunchInfo{Preset: "sglang", Profile: "nccl-debug", Env: map[string]string{"NCCL_DEBUG": "INFO", "NCCL_NTHREADS": "512"}, At: time.Now()})
	p, _ = c.Plan(req)
	var diff []string
	for _, d := range p.EnvDiff {
		diff = append(diff, d.Name)
		switch d.Name {
		case "NCCL_DEBUG":
			if !d.Removed {
				t.Errorf("NCCL_DEBUG: %+v, want removed", d)
			}
		case "NCCL_NTHREADS":
			if d.Old != "512" || d.New != "256" || d.Added || d.Removed {
				t.Errorf("NCCL_NTHREADS: %+v", d)
			}
		case "HF_TOKEN":
			if !d.Added || d.New != "<redacted>" {
				t.Errorf("HF_TOKEN: %+v, want added and redacted", d)
			}
		}
	}
	if want := []string{"HF_TOKEN", "NCCL_ALGO", "NCCL_DEBUG", "NCCL_MAX_NCHANNELS", "NCCL_NTHREADS", "NCCL_P2P_LEVEL", "NCCL_PROTO"}; !slices.Equal(diff, want) {
		t.Errorf("diff %v, want %v", diff, want)
	}
	// The form starts from the last launch; p picks the next profile.
	if err := c.SetProfile("nccl-ll-ring"); err != nil {
		t.Fatal(err)
	}
	if r := c.Request(); r.Preset != "sglang" || r.Profile != "nccl-ll-ring" {
		t.Errorf("request after p: %+v", r)
	}
	if err := c.SetProfile("nope"); err == nil {
		t.Error("unknown profile accepted")
	}

	eagle, err := c.Plan(LaunchRequest{Preset: "sglang-eagle3", Profile: "none", Model: "m", Draft: "/models/eagle3 draft", TP: 8})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(eagle.Spec.Argv, "--speculative-draft-model-path"); i < 0 || eagle.Spec.Argv[i+1] != "/models/eagle3 draft" {
		t.Errorf("eagle3 argv %q", eagle.Spec.Argv)
	}
	for _, tc := range []struct {
		req  LaunchRequest
		want string
	}{
		{LaunchRequest{Preset: "sglang-eagle3", Profile: "none", Model: "m", TP: 8}, "placeholder {draft_model} has no value"},
		{LaunchRequest{Preset: "sglang-fp9", Profile: "none"}, "sglang-fp9"},
		{LaunchRequest{Preset: "sglang", Profile: "nccl-fast"}, "nccl-fast"},
		{LaunchRequest{Preset: "sglang", Profile: "none", TP: 8}, "placeholder {model} has no value"},
		{LaunchRequest{Preset: "sglang", Profile: "none", Model: "m", TP: 8, Extra: "--x; rm -rf /"}, "extra flags"},
		{LaunchRequest{Preset: "sglang", Profile: "none", Model: "m", TP: 8, Port: 70000}, "port 70000"},
		{LaunchRequest{Preset: "sglang", Profile: "none", Model: "m\nx", TP: 8}, "newline"},
	} {
		if _, err := c.Plan(tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Plan(%+v) = %v, want an error naming %q", tc.req, err, tc.want)
		}
	}
}

// TestControlPlanAgain: the last launch planned again from its pidfile
// record — its argv as run (a model the configuration does not name), its
// profile's variables with their secret values from the configuration —
// and refused once the profile's variables have changed.
func TestControlPlanAgain(t *testing.T) {
	cfg, err := config.Parse("config.toml", []byte(`
[profiles.secret]
extends = "nccl-ll-ring"
env = { HF_TOKEN = "hf_abc" }
`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Control{Config: cfg, Target: config.Host{Preset: "sglang", LogDir: "/data/logs"}} // no model configured
	if _, err := c.PlanAgain(); err == nil {
		t.Fatal("PlanAgain with no known launch")
	}
	if _, err := c.Plan(c.Request()); err == nil {
		t.Fatal("the request plans without a model: the test needs it not to")
	}
	env, _ := cfg.ResolveProfile("secret")
	argv := []string{"python3", "-m", "sglang.launch_server", "--model-path", "/models/given on the CLI", "--port", "30001"}
	c.Remember(event.LaunchInfo{Preset: "sglang", Profile: "secret", Server: "sglang", Argv: argv, Env: server.Redact(env),
		Workdir: "/srv", Port: 30001, At: time.Now()})
	p, err := c.PlanAgain()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Spec.Argv, argv) || p.Spec.Env["HF_TOKEN"] != "hf_abc" || p.Spec.Port != 30001 || p.Spec.Workdir != "/srv" ||
		p.Spec.LogDir != "/data/logs" || strings.Contains(p.CommandLine, "hf_abc") {
		t.Errorf("plan again: %+v %q", p.Spec, p.CommandLine)
	}
	c.Remember(event.LaunchInfo{Preset: "sglang", Profile: "secret", Argv: argv, Env: map[string]string{"NCCL_PROTO": "Simple"}, At: time.Now().Add(time.Second)})
	if _, err := c.PlanAgain(); err == nil || !strings.Contains(err.Error(), "changed since the launch") {
		t.Errorf("a changed profile: %v", err)
	}
}

// TestFillCountsGPUsOnlyWithoutTP: Fill takes every empty field of a
// request from the host's configuration, and asks the host for its GPU
// count (an nvidia-smi run on a remote host) only when neither the request
// nor the configuration has a tp.
func TestFillCountsGPUsOnlyWithoutTP(t *testing.T) {
	counted := 0
	c := &Control{Config: config.Builtins(), Target: config.Host{Preset: "sglang", Profile: "none", Model: "/models/llama", Port: 30000},
		GPUCount: func() int { counted++; return 8 }}
	got := c.Fill(LaunchRequest{Profile: "nccl-ll-ring", TP: 4})
	want := LaunchRequest{Preset: "sglang", Profile: "nccl-ll-ring", Model: "/models/llama", TP: 4, Port: 30000}
	if !reflect.DeepEqual(got, want) || counted != 0 {
		t.Errorf("with --tp: %+v (GPUs counted %d times), want %+v", got, counted, want)
	}
	if got := c.Fill(LaunchRequest{}); got.TP != 8 || got.Profile != "none" || counted != 1 {
		t.Errorf("without: %+v, GPUs counted %d times", got, counted)
	}
	c.Target.TP = 2
	if got := c.Fill(LaunchRequest{}); got.TP != 2 || counted != 1 {
		t.Errorf("configured tp: %+v, GPUs counted %d times", got, counted)
	}
}
