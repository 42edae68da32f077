package sessions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// LaunchRequest is what the user chooses for a launch: the launch form's
// fields and the CLI's flags. Zero fields take the host's configured
// defaults (see Control.Request).
type LaunchRequest struct {
	Preset  string
	Profile string
	Model   string
	Draft   string // {draft_model}: the EAGLE draft model (sglang-eagle3)
	TP      int    // tensor-parallel size
	Port    int    // HTTP port
	Extra   string // extra flags, split like a shell command line (quotes allowed, no expansions)
}

// EnvChange is one difference between two launches' environments.
type EnvChange struct {
	Name     string
	Old, New string // "" when absent
	Added    bool   // not in the old launch
	Removed  bool   // not in the new launch
}

// Plan is a resolved launch, ready to show and confirm.
type Plan struct {
	Request     LaunchRequest
	Spec        server.Spec
	CommandLine string      // "env NCCL_PROTO=LL … python3 -m sglang.launch_server …", quoted as a shell would need; secret values redacted
	EnvDiff     []EnvChange // against the last launch: nil when there was none, empty when the same
	Replaces    int         // pid of the running server the launch kills first; 0 when none
}

// Control drives the inference server on one host: the plain functions
// behind the cockpit's K, L and p keys and the `flightdeck server`
// commands. It publishes what it does (event.ServerLaunched, event.KillStep)
// to Publish, the same stream the probes feed. Methods are safe for
// concurrent use; Launch and Kill hold a lock so two never overlap.
type Control struct {
	Host       remote.Host
	Dialer     remote.Dialer // for health checks; nil: Host when it is one
	Config     *config.Config
	Target     config.Host // the effective host settings (Config.Host(alias))
	GPUProgram string      // nvidia-smi on the host; "" = "nvidia-smi"
	Grace      time.Duration
	GPUTimeout time.Duration // how long a kill waits for GPU memory; default 2 min
	Publish    event.Sink    // nil: nothing published
	Follow     func(path string)
	// GPUCount, when set, gives the number of GPUs seen, the default TP.
	GPUCount func() int
	// NoProcessMatch stops Find from adopting a server by its command line
	// (server.DefaultMatch), leaving the pidfile and the port. The demo and
	// tests set it: on a shared machine another simulated host's server
	// looks like an inference server too.
	NoProcessMatch bool
	// Guard, when set, is asked before each launch and kill (after the
	// previous one finished), and again right before the signal or the
	// launch command goes out: an error refuses it. The cockpit sets it to
	// the driver lock confirmed on the host (driver.Lock.Confirm), so that
	// an action queued or begun while another cockpit took the host over
	// never runs.
	Guard func(context.Context) error
	// Fence, when set, names the driver lock that a kill checks in its
	// own script right before its SIGTERM (server.KillFenced): Guard's
	// check and the signal are two host commands apart, and a take-over
	// between them must stop the signal.
	Fence func() server.Fence

	act     sync.Mutex // one launch or kill at a time
	mu      sync.Mutex
	last    *event.LaunchInfo
	lastReq *LaunchRequest
	profile string // chosen with SetProfile, for the next launch

	absLogDir, absWorkdir string // Target's, resolved on the host (dirs)
}

func (c *Control) publish(p event.Payload) {
	if c.Publish != nil {
		c.Publish(event.Event{At: time.Now(), Data: p})
	}
}

// SetProfile chooses the env profile the next launch uses by default (the
// cockpit's p key). It returns an error for an unknown profile.
func (c *Control) SetProfile(name string) error {
	if _, err := c.Config.ResolveProfile(name); err != nil {
		return err
	}
	c.mu.Lock()
	c.profile = name
	c.mu.Unlock()
	return nil
}

// Profiles lists the profile names, sorted; Presets the preset names.
func (c *Control) Profiles() []string { return c.Config.ProfileNames() }

// Presets lists the preset names, sorted.
func (c *Control) Presets() []string { return c.Config.PresetNames() }

// Remember records the last launch found on the host (a pidfile), so the
// next plan diffs against it and the form starts from it.
func (c *Control) Remember(l event.LaunchInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil || l.At.After(c.last.At) {
		c.last = &l
	}
}

// Request is the launch form's starting point: the last request made here,
// else the last launch found on the host, else the host's configuration;
// then the profile chosen with SetProfile.
func (c *Control) Request() LaunchRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var r LaunchRequest
	switch {
	case c.lastReq != nil:
		r = *c.lastReq
	case c.last != nil && c.last.Preset != "":
		r = LaunchRequest{Preset: c.last.Preset, Profile: c.last.Profile, Port: c.last.Port, Model: c.Target.Model, Draft: c.Target.DraftModel, TP: c.Target.TP}
	default:
		r = c.defaults()
	}
	if c.profile != "" {
		r.Profile = c.profile
	}
	if r.TP == 0 && c.GPUCount != nil {
		r.TP = c.GPUCount()
	}
	return r
}

// Defaults is the request the host's configuration alone gives (what the
// CLI's launch starts from: scripts get the same launch every time).
func (c *Control) Defaults() LaunchRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.defaults()
	if r.TP == 0 && c.GPUCount != nil {
		r.TP = c.GPUCount()
	}
	return r
}

// Fill is req with each field left empty (or 0) taken from Defaults; the
// host's GPUs are counted (for tp) only when req has no TP.
func (c *Control) Fill(req LaunchRequest) LaunchRequest {
	c.mu.Lock()
	def := c.defaults()
	c.mu.Unlock()
	for _, f := range []struct {
		v *string
		d string
	}{{&req.Preset, def.Preset}, {&req.Profile, def.Profile}, {&req.Model, def.Model}, {&req.Draft, def.Draft}} {
		if *f.v == "" {
			*f.v = f.d
		}
	}
	if req.Port == 0 {
		req.Port = def.Port
	}
	if req.TP == 0 {
		req.TP = def.TP
		if req.TP == 0 && c.GPUCount != nil {
			req.TP = c.GPUCount()
		}
	}
	return req
}

func (c *Control) defaults() LaunchRequest {
	return LaunchRequest{Preset: c.Target.Preset, Profile: c.Target.Profile, Model: c.Target.Model, Draft: c.Target.DraftModel, TP: c.Target.TP, Port: c.Target.Port}
}

// Plan resolves req against the configuration: preset and profile exist,
// placeholders have values, extra flags split, env valid. The result says
// exactly what Launch will run and how its environment differs from the
// last launch. Errors name the field ("preset", "profile", "model", …) and
// carry the config file's line where one applies.
func (c *Control) Plan(req LaunchRequest) (Plan, error) {
	p := Plan{Request: req}
	if req.Preset == "" {
		return p, errors.New("no preset chosen")
	}
	preset, err := c.Config.Preset(req.Preset)
	if err != nil {
		return p, err
	}
	if req.Profile == "" {
		req.Profile = "none"
	}
	env, err := c.Config.ResolveProfile(req.Profile)
	if err != nil {
		return p, err
	}
	if err := remote.ValidateEnv(env); err != nil {
		return p, fmt.Errorf("profile %s: %w", req.Profile, err)
	}
	extra, err := config.SplitWords(req.Extra)
	if err != nil {
		return p, fmt.Errorf("extra flags: %w", err)
	}
	port := req.Port
	if port == 0 {
		port = preset.DefaultPort()
	}
	if port < 1 || port > 65535 {
		return p, fmt.Errorf("port %d out of range 1-65535", port)
	}
	if req.TP < 0 {
		return p, fmt.Errorf("tp %d must be positive", req.TP)
	}
	vals := map[string]string{"model": req.Model, "draft_model": req.Draft, "port": strconv.Itoa(port), "host": "127.0.0.1"}
	if req.TP > 0 {
		vals["tp"] = strconv.Itoa(req.TP)
	}
	argv, err := preset.Render(vals, extra)
	if err != nil {
		return p, err
	}
	p.Request.Port, p.Request.Profile = port, req.Profile
	p.Spec = server.Spec{Preset: preset.Name, Profile: req.Profile, Server: preset.Server, Argv: argv, Env: env,
		Workdir: c.Target.Workdir, LogDir: c.Target.LogDir, Port: port}
	if err := p.Spec.Validate(); err != nil {
		return p, err
	}
	// Shown on screens and in logs: secret-looking values redacted.
	p.CommandLine = server.CommandLine(event.LaunchInfo{Argv: server.RedactArgv(argv)})
	if len(env) > 0 {
		p.CommandLine = "env " + server.EnvLine(server.Redact(env)) + " " + p.CommandLine
	}
	c.mu.Lock()
	if c.last != nil {
		// Non-nil when there was a last launch, even if nothing changed.
		p.EnvDiff = append([]EnvChange{}, DiffEnv(c.last.Env, server.Redact(env))...)
	}
	c.mu.Unlock()
	return p, nil
}

// PlanAgain plans the last launch again, exactly: its command line as the
// pidfile recorded it, and its env profile's variables from the
// configuration (the pidfile keeps secret values redacted). It is what a
// repeat relaunches when the launch form's request would not reproduce the
// running server (a model given on the command line, not in the
// configuration). It fails when no launch is known, or when the profile's
// variables are no longer those the launch had.
func (c *Control) PlanAgain() (Plan, error) {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last == nil || len(last.Argv) == 0 {
		return Plan{}, errors.New("no launch by flightdeck is known on this host")
	}
	profile := last.Profile
	if profile == "" {
		profile = "none"
	}
	env, err := c.Config.ResolveProfile(profile)
	if err != nil {
		return Plan{}, err
	}
	if d := DiffEnv(last.Env, server.Redact(env)); len(d) > 0 {
		return Plan{}, fmt.Errorf("profile %s: its variables changed since the launch (%s first)", profile, d[0].Name)
	}
	p := Plan{Request: LaunchRequest{Preset: last.Preset, Profile: profile, Port: last.Port}, EnvDiff: []EnvChange{}}
	p.Spec = server.Spec{Preset: last.Preset, Profile: profile, Server: last.Server, Argv: append([]string(nil), last.Argv...), Env: env,
		Workdir: last.Workdir, LogDir: c.Target.LogDir, Port: last.Port}
	if err := p.Spec.Validate(); err != nil {
		return p, err
	}
	p.CommandLine = server.CommandLine(event.LaunchInfo{Argv: server.RedactArgv(p.Spec.Argv)})
	if len(env) > 0 {
		p.CommandLine = "env " + server.EnvLine(server.Redact(env)) + " " + p.CommandLine
	}
	return p, nil
}

// DiffEnv lists the variables that differ between old and new, by name.
func DiffEnv(old, new map[string]string) []EnvChange {
	names := map[string]bool{}
	for k := range old {
		names[k] = true
	}
	for k := range new {
		names[k] = true
	}
	var out []EnvChange
	for _, k := range slices.Sorted(maps.Keys(names)) {
		o, inOld := old[k]
		n, inNew := new[k]
		if inOld && inNew && o == n {
			continue
		}
		out = append(out, EnvChange{Name: k, Old: o, New: n, Added: !inOld, Removed: !inNew})
	}
	return out
}

func (c *Control) dialer() remote.Dialer {
	if c.Dialer != nil {
		return c.Dialer
	}
	d, _ := c.Host.(remote.Dialer)
	return d
}

// dirs returns the host's log and working directories made absolute,
// reading $HOME on the host once for the life of the Control (the monitor
// calls Find every few seconds).
func (c *Control) dirs(ctx context.Context) (logDir, workdir string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.absLogDir == "" {
		logDir, workdir = c.Target.LogDir, c.Target.Workdir
		if logDir == "" {
			logDir = server.DefaultLogDir
		}
		if err := server.Resolve(ctx, c.Host, &logDir, &workdir); err != nil {
			return "", "", err
		}
		c.absLogDir, c.absWorkdir = logDir, workdir
	}
	return c.absLogDir, c.absWorkdir, nil
}

// DefaultPort is the host's configured server port, else its preset's (30000 for SGLang, 8000 for vLLM): where Find looks for a server by port.
func (c *Control) DefaultPort() int {
	if c.Target.Port != 0 {
		return c.Target.Port
	}
	if p, err := c.Config.Preset(c.Target.Preset); err == nil {
		return p.DefaultPort()
	}
	return 0
}

// Find looks for the server on the host (pidfile, then the configured
// port, then a command line that looks like an inference server).
func (c *Control) Find(ctx context.Context) (event.ServerFound, error) {
	match := server.DefaultMatch
	if c.NoProcessMatch {
		match = ""
	}
	logDir, _, err := c.dirs(ctx)
	if err != nil {
		return event.ServerFound{}, err
	}
	f, err := server.Find(ctx, c.Host, logDir, c.DefaultPort(), match)
	if errors.Is(err, remote.ErrDisconnected) && ctx.Err() == nil {
		// Find only reads: after a dropped connection (the host reconnects
		// by itself), one more try is safe.
		f, err = server.Find(ctx, c.Host, logDir, c.DefaultPort(), match)
	}
	if err == nil && f.Record != nil {
		c.Remember(f.Record.Launch)
	}
	return f, err
}

// Launch runs plan: it kills the running server first if there is one
// (waiting for its GPU memory), launches, publishes event.ServerLaunched and
// switches the followed log to the new one. It returns once the server
// process exists; readiness arrives as event.ServerStatus events.
func (c *Control) Launch(ctx context.Context, plan Plan) (event.LaunchRecord, error) {
	c.act.Lock()
	defer c.act.Unlock()
	if err := c.guard(ctx); err != nil {
		return event.LaunchRecord{}, err
	}
	f, err := c.Find(ctx)
	if err != nil {
		return event.LaunchRecord{}, err
	}
	killed := false
	if f.Running {
		if err := c.kill(ctx, f, true); err != nil {
			return event.LaunchRecord{}, fmt.Errorf("relaunch: the old server: %w", err)
		}
		killed = true
	}
	spec := plan.Spec
	spec.At = time.Now()
	if spec.LogDir, spec.Workdir, err = c.dirs(ctx); err != nil {
		return event.LaunchRecord{}, err
	}
	if err := c.guard(ctx); err != nil {
		if killed {
			// Taken over between the kill and the launch: say what was
			// done, not only what was refused.
			return event.LaunchRecord{}, fmt.Errorf("relaunch: killed the old server (pid %d), then did not launch: %w", f.ServerPID, err)
		}
		return event.LaunchRecord{}, err
	}
	rec, err := server.Launch(ctx, c.Host, spec)
	if err != nil {
		return rec, err
	}
	c.mu.Lock()
	l := rec.Launch
	c.last = &l
	req := plan.Request
	c.lastReq = &req
	c.profile = ""
	c.mu.Unlock()
	c.publish(event.ServerLaunched{Record: rec})
	if c.Follow != nil {
		c.Follow(rec.Launch.LogPath)
	}
	return rec, nil
}

// Kill stops the running server and waits for its GPU memory. It returns
// server.ErrNoServer when none is running.
func (c *Control) Kill(ctx context.Context) error {
	c.act.Lock()
	defer c.act.Unlock()
	if err := c.guard(ctx); err != nil {
		return err
	}
	f, err := c.Find(ctx)
	if err != nil {
		return err
	}
	if !f.Running {
		return server.ErrNoServer
	}
	return c.kill(ctx, f, false)
}

// guard asks Guard, if set.
func (c *Control) guard(ctx context.Context) error {
	if c.Guard == nil {
		return nil
	}
	return c.Guard(ctx)
}

// kill stops f; relaunch marks its KillSteps as the first half of a Launch.
func (c *Control) kill(ctx context.Context, f event.ServerFound, relaunch bool) error {
	grace := c.Grace
	if grace <= 0 {
		grace = server.DefaultGrace
	}
	if err := c.guard(ctx); err != nil {
		// Refused at the last moment: the journal says so after the key.
		c.publish(event.KillStep{Step: "failed", PID: f.ServerPID, Err: err, Relaunch: relaunch})
		return err
	}
	c.publish(event.KillStep{Step: "signalling", PID: f.ServerPID, Detail: fmt.Sprintf("SIGTERM sent; SIGKILL after %v", grace), Relaunch: relaunch})
	var fence server.Fence
	if c.Fence != nil {
		fence = c.Fence()
	}
	res, err := server.KillFenced(ctx, c.Host, f.Target, grace, fence)
	if err != nil {
		c.publish(event.KillStep{Step: "failed", PID: f.ServerPID, Err: err, Relaunch: relaunch})
		return err
	}
	pids := make([]int, 0, len(res.Members))
	for _, p := range res.Members {
		pids = append(pids, p.PID)
	}
	detail := ""
	if len(res.Escalated) > 0 {
		detail = fmt.Sprintf("SIGKILL after %v: %v", grace, res.Escalated)
	}
	c.publish(event.KillStep{Step: "waiting-gpu", PID: f.ServerPID, Detail: "waiting for GPU memory to be freed", Relaunch: relaunch})
	timeout := c.GPUTimeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	err = WaitGPUFree(ctx, c.Host, c.GPUProgram, pids, timeout, func(s string) {
		c.publish(event.KillStep{Step: "waiting-gpu", PID: f.ServerPID, Detail: s, Relaunch: relaunch})
	})
	switch {
	case errors.Is(err, ErrNoGPUTool):
		detail = strings.TrimPrefix(detail+"; "+err.Error(), "; ")
	case err != nil:
		c.publish(event.KillStep{Step: "failed", PID: f.ServerPID, Err: err, Relaunch: relaunch})
		return err
	default:
		detail = strings.TrimPrefix(detail+"; GPU memory free", "; ")
	}
	c.publish(event.KillStep{Step: "done", PID: f.ServerPID, Detail: detail, Relaunch: relaunch})
	return nil
}
