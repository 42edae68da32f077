package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/launch"
	"github.com/flightdeck-dev/flightdeck/tui/dialogs/profile"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

// fakeControl records what the cockpit asks of the server. Plan is
// computed from the request like the real one: the profile sets the env,
// the command line names every field, a missing model is an error.
type fakeControl struct {
	mu       sync.Mutex
	req      sessions.LaunchRequest
	presets  []string
	profiles []string
	planErr  error // returned by every Plan when set

	plans    []sessions.LaunchRequest
	launched []sessions.Plan
	kills    int
	picked   []string
	killErr  error
	killCtx  context.Context
	block    bool // Kill waits for its context to end
	killing  chan struct{}
}

func newFake() *fakeControl {
	return &fakeControl{
		req:      sessions.LaunchRequest{Preset: "sglang", Profile: "none", Model: "/models/Llama-3.1-8B-Instruct", TP: 8, Port: 30000},
		presets:  []string{"sglang", "sglang-eagle3", "vllm"},
		profiles: []string{"nccl-debug", "nccl-ll-ring", "none"},
		killing:  make(chan struct{}, 1),
	}
}

var fakeEnv = map[string][]sessions.EnvChange{
	"none": {{Name: "NCCL_DEBUG", Old: "INFO", Removed: true}},
	"nccl-ll-ring": {
		{Name: "NCCL_ALGO", New: "Ring", Added: true},
		{Name: "NCCL_DEBUG", Old: "INFO", Removed: true},
		{Name: "NCCL_NTHREADS", Old: "256", New: "512"},
		{Name: "NCCL_PROTO", New: "LL", Added: true},
	},
	"nccl-debug": {},
}

func (f *fakeControl) Request() sessions.LaunchRequest { return f.req }
func (f *fakeControl) Presets() []string               { return f.presets }
func (f *fakeControl) Profiles() []string              { return f.profiles }

func (f *fakeControl) Plan(r sessions.LaunchRequest) (sessions.Plan, error) {
	f.mu.Lock()
	f.plans = append(f.plans, r)
	f.mu.Unlock()
	if f.planErr != nil {
		return sessions.Plan{Request: r}, f.planErr
	}
	if r.Model == "" {
		return sessions.Plan{Request: r}, errors.New(`preset "sglang": {model} has no value (set model in the form or [hosts] model)`)
	}
	env := ""
	switch r.Profile {
	case "nccl-ll-ring":
		env = "env NCCL_ALGO=Ring NCCL_NTHREADS=512 NCCL_PROTO=LL "
	case "nccl-debug":
		env = "env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL "
	}
	cl := fmt.Sprintf("%spython3 -m sglang.launch_server --model-path %s --tp-size %d --host 127.0.0.1 --port %d --log-level info --enable-metrics",
		env, r.Model, r.TP, r.Port)
	if r.Extra != "" {
		cl += " " + r.Extra
	}
	return sessions.Plan{Request: r, CommandLine: cl, EnvDiff: fakeEnv[r.Profile]}, nil
}

func (f *fakeControl) Launch(_ context.Context, p sessions.Plan) (event.LaunchRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.launched = append(f.launched, p)
	return event.LaunchRecord{PID: 5001, Launch: event.LaunchInfo{Preset: p.Request.Preset, LogPath: "/root/.flightdeck/logs/sglang-20251022-103000.log"}}, nil
}

func (f *fakeControl) Kill(ctx context.Context) error {
	f.mu.Lock()
	f.kills++
	f.killCtx = ctx
	block := f.block
	f.mu.Unlock()
	if block {
		f.killing <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	return f.killErr
}

func (f *fakeControl) SetProfile(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.HasPrefix(name, "nccl") && name != "none" {
		return errors.New("unknown profile " + name)
	}
	f.picked = append(f.picked, name)
	return nil
}

func (f *fakeControl) counts() (plans, launched, kills int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.plans), len(f.launched), f.kills
}

// controlled is a connected cockpit with a fake control, optionally with
// a server status, the clock at t0+3m53s.
func controlled(w, h int, st *event.ServerStatus) (*Model, *fakeControl) {
	f := newFake()
	m := scene(w, h, 8, 200, Options{Control: f})
	if st != nil {
		send(m, ev(4*time.Second, *st))
	}
	m.Update(ClockMsg{Now: at(41*time.Second + 3*time.Minute + 12*time.Second)})
	return m, f
}

func ptr[T any](v T) *T { return &v }

// TestKillJustLaunched: a launch whose pid is not known yet can be killed
// at once (a bad launch is exactly what one wants to abort).
func TestKillJustLaunched(t *testing.T) {
	m, f := controlled(80, 24, &event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", Since: t0, Exit: -1})
	press(m, "K")
	if !m.dialogOpen() {
		t.Fatalf("K while launching opened no confirmation; status %q", m.Status())
	}
	if got := boxText(m); !strings.HasPrefix(got, "Kill sglang? SIGTERM") {
		t.Errorf("confirmation %q", got)
	}
	run(press(m, "y"))
	if _, _, kills := f.counts(); kills != 1 {
		t.Errorf("kills %d, want 1", kills)
	}
}

func TestKillWithoutServerSaysSo(t *testing.T) {
	for name, st := range map[string]*event.ServerStatus{
		"no status":    nil,
		"phase none":   {Phase: event.PhaseNone, Since: t0, Exit: -1},
		"exited":       {Phase: event.PhaseExited, Server: "sglang", Exit: 1, Since: t0},
		"failed, gone": {Phase: event.PhaseFailed, Server: "sglang", Class: "oom", Exit: 1, Since: t0},
	} {
		t.Run(name, func(t *testing.T) {
			m, f := controlled(80, 24, st)
			cmd := press(m, "K")
			if m.Status() != "no server running" {
				t.Errorf("status %q", m.Status())
			}
			press(m, "y") // were a confirmation open, this would kill
			if cmd != nil || m.dialogOpen() {
				t.Error("K without a server opened the confirmation or returned a command")
			}
			if _, _, kills := f.counts(); kills != 0 {
				t.Errorf("Kill called %d times", kills)
			}
		})
	}
}

func TestKillAsksThenKillsOnce(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	if cmd := press(m, "K"); cmd != nil {
		t.Fatal("K returned a command before the confirmation")
	}
	if got := boxText(m); got != "Kill sglang pid 4123? SIGTERM, SIGKILL after the grace period, then wait for GPU memory. y/N" {
		t.Errorf("confirmation %q:\n%s", got, plain(m))
	}
	if _, _, kills := f.counts(); kills != 0 {
		t.Fatal("Kill called before y")
	}
	cmd := press(m, "y")
	if cmd == nil {
		t.Fatal("y returned no command")
	}
	if _, _, kills := f.counts(); kills != 0 {
		t.Fatal("Kill ran inside Update")
	}
	if why := killUnavailable(m); why != "a kill is in progress" {
		t.Errorf("K during the kill: %q", why)
	}
	if !strings.Contains(plain(m), "killing sglang pid 4123") {
		t.Errorf("no progress banner:\n%s", plain(m))
	}
	msgs := run(cmd)
	if _, _, kills := f.counts(); kills != 1 {
		t.Fatalf("Kill called %d times", kills)
	}
	if len(msgs) != 1 {
		t.Fatalf("messages %v", msgs)
	}
	r, ok := msgs[0].(KillResultMsg)
	if !ok || r.Err != nil || r.Target != "sglang pid 4123" {
		t.Fatalf("result %#v", msgs[0])
	}
	m.Update(r)
	if m.Status() != "killed sglang pid 4123; its GPU memory is free" {
		t.Errorf("after the kill: %q", m.Status())
	}
	if !painted(m, m.styles.OK, m.Status()) {
		t.Error("success should be green")
	}
}

func TestKillCancelled(t *testing.T) {
	for _, k := range []string{"n", "esc", "enter", "K"} {
		m, f := controlled(80, 24, ptr(readyStatus()))
		press(m, "K")
		if cmd := press(m, k); cmd != nil {
			t.Errorf("%s after K returned a command", k)
		}
		if m.dialogOpen() || strings.Contains(plain(m), "Kill sglang") {
			t.Errorf("%s did not close the confirmation", k)
		}
		if _, _, kills := f.counts(); kills != 0 {
			t.Errorf("%s: Kill called", k)
		}
	}
}

func TestKillNeedsAConnection(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	send(m, connReconnecting(5*time.Second, 1, 8*time.Second))
	if cmd := press(m, "K"); cmd != nil || m.Status() != "not connected" {
		t.Errorf("K while reconnecting: %q", m.Status())
	}
	if cmd := press(m, "L"); cmd != nil || m.Status() != "not connected" || m.dialogOpen() {
		t.Errorf("L while reconnecting: %q", m.Status())
	}
	if _, _, kills := f.counts(); kills != 0 {
		t.Error("Kill called")
	}
	// Footer: the keys that cannot act are dimmed.
	press(m, "j")
	if !painted(m, m.styles.Dim, "K") {
		t.Error("K not dimmed while not connected")
	}
}

func TestKillErrorsShowAndStay(t *testing.T) {
	m, f := controlled(100, 24, ptr(readyStatus()))
	f.killErr = errors.New("kill: 2 processes survived SIGKILL: 4123 4131\x1b]0;pwn\x07; GPU memory still held")
	press(m, "K")
	m.Update(run(press(m, "y"))[0])
	want := "kill failed: kill: 2 processes survived SIGKILL: 4123 4131"
	if !strings.Contains(plain(m), want) {
		t.Errorf("error not shown:\n%s", plain(m))
	}
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
	press(m, "j") // a key does not hide it
	if !strings.Contains(plain(m), want) {
		t.Error("the error went away on a key")
	}
	press(m, "esc")
	if strings.Contains(plain(m), want) {
		t.Error("esc did not hide the error")
	}
	// No server after all: a gentle flash.
	f.killErr = fmt.Errorf("find: %w", server.ErrNoServer)
	press(m, "K")
	m.Update(run(press(m, "y"))[0])
	if m.Status() != "no server running (it had already gone)" {
		t.Errorf("ErrNoServer: %q", m.Status())
	}
}

// screenText is the screen's words; boxText the words inside the
// overlay's frame ("| ... |"), joined by single spaces.
func screenText(m *Model) string { return strings.Join(strings.Fields(plain(m)), " ") }

func boxText(m *Model) string {
	var words []string
	for _, l := range screenLines(m) {
		i, j := strings.Index(l, "| "), strings.LastIndex(l, " |")
		if i >= 0 && j > i {
			words = append(words, strings.Fields(l[i+2:j])...)
		}
	}
	return strings.Join(words, " ")
}

// launchForm is the open launch form, nil when none is open.
func launchForm(m *Model) *launch.Form {
	f, _ := m.overlay.Find(launch.ID).(*launch.Form)
	return f
}

func TestLaunchFormShowsThePlan(t *testing.T) {
	m, f := controlled(200, 60, ptr(readyStatus()))
	press(m, "L")
	if m.overlay.TopID() != launch.ID {
		t.Fatal("L did not open the form")
	}
	if n, _, _ := f.counts(); n != 1 {
		t.Errorf("opening planned %d times", n)
	}
	if f.plans[0] != f.req {
		t.Errorf("first plan %+v, want the control's request %+v", f.plans[0], f.req)
	}
	scr := boxText(m)
	for _, want := range []string{
		"python3 -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --tp-size 8",
		"- NCCL_DEBUG=INFO", "< sglang > 1/3", "< none > 3/3",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("form lacks %q:\n%s", want, plain(m))
		}
	}
	if !strings.Contains(plain(m), "+- relaunch sglang pid 4123 ---") {
		t.Errorf("form title:\n%s", plain(m))
	}
	// The profile: down to it, right picks the next one and replans.
	press(m, "down", "right")
	if got := f.plans[len(f.plans)-1].Profile; got != "nccl-debug" {
		t.Errorf("right on profile planned %q", got)
	}
	press(m, "left")
	if got := f.plans[len(f.plans)-1].Profile; got != "none" {
		t.Errorf("left planned %q", got)
	}
	press(m, "left")
	if got := f.plans[len(f.plans)-1]; got.Profile != "nccl-ll-ring" || got.Model != f.req.Model || got.TP != 8 || got.Port != 30000 {
		t.Errorf("plan %+v", got)
	}
	scr = boxText(m)
	for _, want := range []string{"env NCCL_ALGO=Ring NCCL_NTHREADS=512 NCCL_PROTO=LL python3", "+ NCCL_PROTO=LL",
		"- NCCL_DEBUG=INFO", "~ NCCL_NTHREADS 256 -> 512"} {
		if !strings.Contains(scr, want) {
			t.Errorf("form lacks %q:\n%s", want, plain(m))
		}
	}
	if !painted(m, m.styles.OK, "+ NCCL_PROTO=LL") || !painted(m, m.styles.Crit, "- NCCL_DEBUG=INFO") {
		t.Error("env diff colours")
	}
	// Text fields: type into extra (shift+tab wraps from preset to the
	// hypothesis, the last field, then goes back to extra).
	press(m, "up", "shift+tab", "shift+tab")
	if launchForm(m).Focused() != "extra" {
		t.Fatalf("focus %q, want extra", launchForm(m).Focused())
	}
	typeText(m, "--mem-fraction-static 0.85 --quantization fp8")
	if got := f.plans[len(f.plans)-1].Extra; got != "--mem-fraction-static 0.85 --quantization fp8" {
		t.Errorf("extra planned %q", got)
	}
	// Keys go to the form, not the cockpit: q is text, not quit.
	if m.Quitting() || !strings.Contains(boxText(m), "--enable-metrics --mem-fraction-static 0.85 --quantization fp8") {
		t.Errorf("typing did not reach the command line:\n%s", plain(m))
	}
	// The rest of the screen keeps updating under the form.
	send(m, ev(4*time.Minute, linesOf("[2025-10-22 10:31:00 TP0] a line that arrived while the form was open")))
	if !strings.Contains(plain(m), "a line that arrived while the form") {
		t.Error("the log stopped under the form")
	}
	// A bad number is the form's own error; Plan is not asked.
	press(m, "up", "up")
	if launchForm(m).Focused() != "tp" {
		t.Fatalf("focus %q, want tp", launchForm(m).Focused())
	}
	n, _, _ := f.counts()
	typeText(m, "x")
	if n2, _, _ := f.counts(); n2 != n {
		t.Error("Plan called with a tp that is not a number")
	}
	if !strings.Contains(boxText(m), `cannot launch: tp: "8x" is not a whole number`) {
		t.Errorf("bad tp:\n%s", plain(m))
	}
	press(m, "enter")
	if launchForm(m) == nil || launchForm(m).Confirming() || !strings.HasPrefix(m.Status(), "cannot launch") {
		t.Errorf("enter with an error: confirming %v, status %q", launchForm(m) != nil && launchForm(m).Confirming(), m.Status())
	}
	press(m, "backspace")
	press(m, "esc")
	if m.dialogOpen() || launchForm(m) != nil {
		t.Error("esc did not close the form")
	}
	if _, launched, _ := f.counts(); launched != 0 {
		t.Error("launched without a confirmation")
	}
}

func TestRelaunchAsksThenLaunchesThePlan(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	press(m, "L", "down", "left") // profile nccl-ll-ring
	want := f.plans[len(f.plans)-1]
	if cmd := press(m, "enter"); cmd != nil {
		t.Fatal("enter with a running server launched without asking")
	}
	if !strings.Contains(boxText(m), "Relaunch: kills sglang pid 4123, waits for GPU memory, then launches. y/N") {
		t.Errorf("no relaunch question:\n%s", plain(m))
	}
	// n goes back to the form.
	press(m, "n")
	if launchForm(m) == nil || launchForm(m).Confirming() {
		t.Fatal("n did not return to the form")
	}
	press(m, "enter")
	cmd := press(m, "y")
	if cmd == nil || m.dialogOpen() {
		t.Fatal("y did not start the launch")
	}
	if _, launched, _ := f.counts(); launched != 0 {
		t.Fatal("Launch ran inside Update")
	}
	if launchUnavailable(m) != "a launch is in progress" || killUnavailable(m) != "a launch is in progress" {
		t.Error("K/L during a launch")
	}
	msgs := run(cmd)
	if _, launched, _ := f.counts(); launched != 1 || f.launched[0].Request != want || !strings.Contains(f.launched[0].CommandLine, "NCCL_PROTO=LL") {
		t.Fatalf("launched %+v, want the plan of %+v", f.launched, want)
	}
	m.Update(msgs[0])
	if m.Status() != "launched: /root/.flightdeck/logs/sglang-20251022-103000.log" {
		t.Errorf("after launch: %q", m.Status())
	}
}

func TestLaunchWithoutServerStartsAtOnce(t *testing.T) {
	m, f := controlled(80, 24, &event.ServerStatus{Phase: event.PhaseKilled, Server: "sglang", Profile: "none", Since: t0, Exit: -1})
	press(m, "L")
	cmd := press(m, "enter")
	if cmd == nil || m.dialogOpen() {
		t.Fatal("enter without a server should launch at once")
	}
	run(cmd)
	if _, launched, _ := f.counts(); launched != 1 {
		t.Errorf("launched %d", launched)
	}
	// Without any status yet the cockpit cannot tell: it asks.
	m2, _ := controlled(80, 24, nil)
	press(m2, "L")
	if cmd := press(m2, "enter"); cmd != nil || !strings.Contains(boxText(m2), "Launch: kills the running server first, if there is one") {
		t.Errorf("unknown state: launched without asking:\n%s", plain(m2))
	}
}

func TestLaunchPlanErrorShown(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	f.planErr = errors.New("profiles.fast (line 12): NCCL_PROTO\x1b[31m: value has a newline")
	press(m, "L")
	scr := boxText(m)
	if !strings.Contains(scr, "cannot launch: profiles.fast (line 12): NCCL_PROTO: value has a newline") {
		t.Errorf("plan error not shown:\n%s", plain(m))
	}
	if !painted(m, m.styles.Crit, "cannot launch:") {
		t.Error("plan error not red")
	}
	if strings.Contains(m.View().Content, "\x1b[31m:") {
		t.Error("plan error unsanitised")
	}
	if cmd := press(m, "enter"); cmd != nil || launchForm(m).Confirming() {
		t.Error("enter with a plan error")
	}
}

func TestProfilePicker(t *testing.T) {
	m, f := controlled(80, 24, ptr(readyStatus()))
	press(m, "p")
	if m.overlay.TopID() != profile.ID {
		t.Fatal("p did not open the picker")
	}
	scr := plain(m)
	if !strings.Contains(scr, "> * none  (current)") || !strings.Contains(scr, "nccl-ll-ring") {
		t.Errorf("picker:\n%s", scr)
	}
	press(m, "esc")
	if m.dialogOpen() || len(f.picked) != 0 {
		t.Error("esc picked")
	}
	press(m, "p", "up", "enter")
	if len(f.picked) != 1 || f.picked[0] != "nccl-ll-ring" {
		t.Fatalf("picked %v", f.picked)
	}
	if m.Status() != "profile nccl-ll-ring for the next launch - L to relaunch" {
		t.Errorf("flash %q", m.Status())
	}
	if h := screenLines(m)[0]; !strings.HasSuffix(h, "  profile -> nccl-ll-ring") {
		t.Errorf("header %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 24})
	if h := screenLines(m)[0]; !strings.Contains(h, "  profile none -> nccl-ll-ring  ") {
		t.Errorf("wide header %q", h)
	}
	// The pick stays until a launch from here succeeds.
	f.req.Profile = "nccl-ll-ring" // what sessions.Control.Request does after SetProfile
	press(m, "L", "enter")
	m.Update(run(press(m, "y"))[0])
	send(m, ev(5*time.Minute, event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", Profile: "nccl-ll-ring", Since: at(5 * time.Minute), LaunchedAt: at(5 * time.Minute), Exit: -1}))
	if h := screenLines(m)[0]; strings.Contains(h, "->") || !strings.Contains(h, "profile nccl-ll-ring") {
		t.Errorf("header after the launch %q", h)
	}
}

// TestHeaderServerStatus: one row per phase, at 200 columns.
func TestHeaderServerStatus(t *testing.T) {
	base := func(p event.ServerPhase, since time.Duration) event.ServerStatus {
		return event.ServerStatus{Phase: p, Server: "sglang", PID: 4123, Profile: "nccl-ll-ring", Since: at(since), LaunchedAt: t0, Exit: -1}
	}
	with := func(s event.ServerStatus, f func(*event.ServerStatus)) event.ServerStatus { f(&s); return s }
	now := at(5 * time.Minute)
	cases := []struct {
		name string
		st   event.ServerStatus
		want string
		tone func(style.Styles) style.Tone
	}{
		{"ready", with(base(event.PhaseReady, 5*time.Minute-3*time.Minute-12*time.Second), func(s *event.ServerStatus) { s.ReadyAfter = 41 * time.Second }),
			"sglang pid 4123 ready 3m12s  ready in 41s  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.OK }},
		{"loading", with(base(event.PhaseLoading, 5*time.Minute-12*time.Second), func(s *event.ServerStatus) { s.Stage = "capturing CUDA graphs" }),
			"sglang pid 4123 loading 12s capturing CUDA graphs  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Warn }},
		{"launching", with(base(event.PhaseLaunching, 5*time.Minute-2*time.Second), func(s *event.ServerStatus) { s.PID = 0 }),
			"sglang launching 2s  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Warn }},
		{"failed", with(base(event.PhaseFailed, time.Minute), func(s *event.ServerStatus) {
			s.Class, s.Text = "oom", "torch.OutOfMemoryError: CUDA out of memory."
		}), "sglang pid 4123 failed oom  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Crit }},
		{"exited", with(base(event.PhaseExited, time.Minute), func(s *event.ServerStatus) { s.PID, s.Exit = 0, 1 }),
			"sglang exited 1  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Crit }},
		{"killed", with(base(event.PhaseKilled, time.Minute), func(s *event.ServerStatus) { s.PID = 0 }),
			"sglang killed  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Dim }},
		{"stopping", with(base(event.PhaseStopping, time.Minute), func(s *event.ServerStatus) { s.Note = "waiting for GPU memory" }),
			"sglang pid 4123 stopping: waiting for GPU memory  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Warn }},
		{"adopted", event.ServerStatus{Phase: event.PhaseRunning, Server: "vllm", PID: 77, Since: t0, Exit: -1},
			"vllm pid 77 running (adopted)", func(s style.Styles) style.Tone { return s.OK }},
		{"none", event.ServerStatus{Phase: event.PhaseNone, Since: t0, Exit: -1}, "no server", func(s style.Styles) style.Tone { return s.Dim }},
		{"sanitised", with(base(event.PhaseLoading, 5*time.Minute-3*time.Second), func(s *event.ServerStatus) {
			s.Stage, s.Server = "loading weights\x1b]0;pwn\x07\x1b[2J", "sglang\x1b[31m"
		}), "sglang pid 4123 loading 3s loading weights  profile nccl-ll-ring", func(s style.Styles) style.Tone { return s.Warn }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newSized(200, 24, Options{Control: newFake(), Head: "bba2fc4"})
			send(m, connected(), ev(time.Second, event.ServerReady{Server: "old-heuristic"}), ev(2*time.Second, c.st))
			m.Update(ClockMsg{Now: now})
			want := "flightdeck  root@gpu-box:22  connected  " + c.want + "  HEAD bba2fc4"
			if h := screenLines(m)[0]; h != want {
				t.Errorf("header\n %q\nwant\n %q", h, want)
			}
			if !strings.Contains(m.View().Content, c.tone(m.Styles()).SGR()+strings.Split(c.want, "  ")[0]) {
				t.Errorf("%q painted in the wrong tone", c.want)
			}
			if err := onlySGR(m.View().Content); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHeaderServerStatusFits: at 80 columns the server's state stays and
// lower-priority fields go whole; a long stage is cut, not the state.
func TestHeaderServerStatusFits(t *testing.T) {
	m, _ := controlled(80, 24, ptr(readyStatus()))
	if h := screenLines(m)[0]; h != "flightdeck  root@gpu-box:22  connected  sglang ready 3m12s  profile none" {
		t.Errorf("80 columns: %q", h)
	}
	m.srv.next = "nccl-ll-ring"
	if h := screenLines(m)[0]; h != "flightdeck  root@gpu-box  connected  sglang ready 3m12s  profile -> nccl-ll-ring" {
		t.Errorf("80 columns with a pick: %q", h)
	}
	send(m, ev(4*time.Minute, event.ServerStatus{Phase: event.PhaseStopping, Server: "sglang", PID: 4123, Since: at(4 * time.Minute), Exit: -1,
		Note: "waiting for GPU memory to be freed: GPU 0 holds 120.4 GiB, GPU 1 holds 120.4 GiB, GPU 2 holds 98.0 GiB"}))
	h := screenLines(m)[0]
	if h != "flightdeck  root@gpu-box:22  connected  sglang pid 4123 stopping: waiting for GP" {
		t.Errorf("long note: %q", h)
	}
	// The old heuristic still drives sessions without event.ServerStatus.
	r := scene(80, 24, 8, 10, Options{})
	if h := screenLines(r)[0]; !strings.Contains(h, "sglang ready 3m12s") {
		t.Errorf("replay header %q", h)
	}
}

func TestFailedServerBanner(t *testing.T) {
	m, _ := controlled(100, 24, nil)
	send(m, ev(4*time.Minute, linesOf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")),
		ev(4*time.Minute, event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}),
		ev(4*time.Minute, event.ServerStatus{Phase: event.PhaseFailed, Server: "sglang", PID: 4123, Class: "oom", Since: at(4 * time.Minute), Exit: -1,
			Text: "torch.OutOfMemoryError: CUDA out of memory.\x1b[2J Tried to allocate 2.00 GiB"}))
	ls := screenLines(m)
	if !strings.Contains(ls[0], "sglang pid 4123 failed oom") {
		t.Errorf("header %q", ls[0])
	}
	if ls[1] != "failed oom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" {
		t.Errorf("banner %q", ls[1])
	}
	if !painted(m, m.styles.Crit, ls[1]) {
		t.Error("banner not red")
	}
	// Narrow: the line itself, without the class the header repeats.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	if l := screenLines(m)[1]; l != "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" {
		t.Errorf("narrow banner %q", l)
	}
	// The log tail marks the line too.
	if !painted(m, m.styles.Crit, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") {
		t.Error("failure line not marked in the log")
	}
	if err := onlySGR(m.View().Content); err != nil {
		t.Error(err)
	}
}

func TestHelpListsServerKeysAsAvailable(t *testing.T) {
	m, _ := controlled(200, 60, ptr(readyStatus()))
	press(m, "?")
	for _, l := range []string{"K  kill the server", "L  launch or relaunch the server", "p  choose the env profile"} {
		if !strings.Contains(plain(m), l) {
			t.Errorf("help lacks %q", l)
		}
		if painted(m, m.styles.Dim, l) {
			t.Errorf("%q dimmed", l)
		}
	}
	if !strings.Contains(plain(m), "q    quit (the server keeps running)") {
		t.Error("help lost the quit note")
	}
	// Read-only replays say why first.
	r := newSized(80, 24, Options{ReadOnly: true, Control: newFake()})
	for k, want := range map[string]string{"K": "read-only replay: kill would change the host",
		"L": "read-only replay: launch would change the host", "p": "read-only replay: a profile change would change the host"} {
		press(r, k)
		if r.Status() != want {
			t.Errorf("%s: %q", k, r.Status())
		}
	}
}

// TestQuitDuringAnActionAsksOnce: quitting cancels a kill or launch in
// flight, so the first q says so and a second quits.
func TestQuitDuringAnActionAsksOnce(t *testing.T) {
	m, _ := controlled(80, 24, ptr(readyStatus()))
	press(m, "K", "y")
	if cmd := press(m, "q"); isQuit(cmd) {
		t.Fatal("q quit during a kill without warning")
	}
	if m.Status() != "a kill is in progress; quitting cancels it - q again to quit" {
		t.Errorf("status %q", m.Status())
	}
	if !isQuit(press(m, "q")) {
		t.Error("second q did not quit")
	}
}

// TestRunCancelsActionsOnQuit: a kill in flight gets a context that ends
// when the program does.
func TestRunCancelsActionsOnQuit(t *testing.T) {
	f := newFake()
	f.block = true
	m := New(Options{Control: f, Theme: ThemeDark})
	msgs := make(chan tea.Msg)
	go func() {
		defer close(msgs)
		// One channel: the program sees the events before the keys.
		msgs <- EventsMsg{ev(0, event.ConnState{Host: "gpu-box", Conn: event.Connected}), ev(0, readyStatus())}
		for _, k := range []string{"K", "y"} {
			msgs <- keyMsg(k)
		}
		select {
		case <-f.killing:
		case <-time.After(5 * time.Second): // Kill never ran: quit anyway
		}
		msgs <- keyMsg("q")
		msgs <- keyMsg("q")
	}()
	done := make(chan error, 1)
	go func() { done <- Bridge{Msgs: msgs}.Run(context.Background(), m, runOpts()...) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	f.mu.Lock()
	ctx := f.killCtx
	f.mu.Unlock()
	if ctx == nil {
		t.Fatal("Kill never ran")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Error("the kill's context outlived the program")
	}
}

// TestOverlaysFit: every overlay fits every size, in ASCII chrome.
func TestOverlaysFit(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 60}, {60, 20}, {40, 10}, {20, 5}, {1, 1}, {300, 100}} {
		for _, keys := range [][]string{{"K"}, {"L"}, {"L", "enter"}, {"p"}} {
			m, f := controlled(sz[0], sz[1], ptr(readyStatus()))
			f.req.Extra = strings.Repeat("--flag value ", 30)
			press(m, keys...)
			c := m.View().Content
			ls := strings.Split(c, "\n")
			if len(ls) != sz[1] {
				t.Errorf("%dx%d %v: %d lines", sz[0], sz[1], keys, len(ls))
			}
			for i, l := range ls {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%dx%d %v: line %d is %d wide: %q", sz[0], sz[1], keys, i, w, ansi.Strip(l))
				}
			}
			for _, r := range ansi.Strip(c) {
				if r > 0x7e && (r < 0x2581 || r > 0x2588) {
					t.Errorf("%dx%d %v: non-ASCII %q in chrome", sz[0], sz[1], keys, r)
					break
				}
			}
		}
	}
}

// The server-control goldens: the launch form at 80x24 and 200x60 (the
// relaunch of a ready server with a profile change), the kill
// confirmation, and a failed server. Regenerate with go test -update.
func TestServerGolden(t *testing.T) {
	form := func(w, h int) *Model {
		m, _ := controlled(w, h, ptr(readyStatus()))
		press(m, "L", "down", "left", "down", "down", "down", "down", "down")
		typeText(m, "--mem-fraction-static 0.85")
		return m
	}
	t.Run("launch_80x24", func(t *testing.T) { golden.RequireEqual(t, plain(form(80, 24))) })
	t.Run("launch_200x60", func(t *testing.T) { golden.RequireEqual(t, plain(form(200, 60))) })
	t.Run("relaunch_confirm_80x24", func(t *testing.T) {
		m := form(80, 24)
		press(m, "enter")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("kill_80x24", func(t *testing.T) {
		m, _ := controlled(80, 24, ptr(readyStatus()))
		press(m, "K")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("profile_80x24", func(t *testing.T) {
		m, _ := controlled(80, 24, ptr(readyStatus()))
		press(m, "p", "up")
		golden.RequireEqual(t, plain(m))
	})
	t.Run("failed_80x24", func(t *testing.T) {
		m, _ := controlled(80, 24, nil)
		send(m, ev(4*time.Minute, linesOf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")),
			ev(4*time.Minute, event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}),
			ev(4*time.Minute, event.ServerStatus{Phase: event.PhaseFailed, Server: "sglang", PID: 4123, Class: "oom", Profile: "nccl-ll-ring",
				Since: at(4 * time.Minute), Exit: -1, Text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}))
		golden.RequireEqual(t, plain(m))
	})
	t.Run("failed_80x24_colour", func(t *testing.T) {
		m, _ := controlled(80, 24, ptr(event.ServerStatus{Phase: event.PhaseFailed, Server: "sglang", PID: 4123, Class: "oom",
			Since: at(4 * time.Minute), Exit: -1, Text: "torch.OutOfMemoryError: CUDA out of memory."}))
		golden.RequireEqual(t, m.View().Content)
	})
}

// TestLaunchFormShowsHeadMove: the launch form says when HEAD moved since
// the last launched experiment (its fingerprint's commit), not only the
// env diff: the change this tool exists to catch.
func TestLaunchFormShowsHeadMove(t *testing.T) {
	fp := func(head string) event.ExperimentFingerprint {
		return event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: head}}}
	}
	for _, c := range []struct {
		launched, now, want string
	}{
		{"a6d51c005def07f605f0dd44ce0da458e97c7d62", "65b09bf", "a6d51c0 -> 65b09bf (HEAD moved since the last launch)"},
		{"a6d51c005def07f605f0dd44ce0da458e97c7d62", "a6d51c0", "same commit as the last launch (a6d51c0)"},
	} {
		m, _ := controlled(120, 40, ptr(readyStatus()))
		send(m, ev(5*time.Second, event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerLaunch}),
			ev(6*time.Second, fp(c.launched)), ev(7*time.Second, event.RepoHead{Short: c.now, Commit: c.now}))
		press(m, "L")
		if scr := plain(m); !strings.Contains(scr, "commit vs the last launch") || !strings.Contains(scr, c.want) {
			t.Errorf("now %s: the form lacks %q:\n%s", c.now, c.want, scr)
		}
	}
	// No launched experiment with a fingerprint: nothing to compare.
	m, _ := controlled(120, 40, ptr(readyStatus()))
	press(m, "L")
	if strings.Contains(plain(m), "commit vs the last launch") {
		t.Errorf("a comparison without a launch:\n%s", plain(m))
	}
}

// TestLaunchFormHypothesis: a hypothesis typed in the launch form goes to
// the experiment the launch starts (the open one once Launch returns), in
// the launch's tea.Cmd; without one nothing is updated.
func TestLaunchFormHypothesis(t *testing.T) {
	for _, hyp := range []string{"LL protocol cuts all-reduce latency", ""} {
		f, lab := newFake(), &fakeLab{}
		m := scene(120, 40, 8, 200, Options{Control: f, Experiments: lab})
		send(m, ev(4*time.Second, readyStatus()))
		press(m, "L", "up") // preset wraps to the hypothesis, the last field
		if launchForm(m).Focused() != "hypothesis" {
			t.Fatalf("focus %q, want hypothesis", launchForm(m).Focused())
		}
		typeText(m, hyp)
		press(m, "enter")
		cmd := press(m, "y")
		if len(lab.Calls()) != 0 {
			t.Fatal("the hypothesis was sent inside Update")
		}
		m.Update(run(cmd)[0])
		var updates []string
		for _, c := range lab.Calls() {
			if strings.HasPrefix(c, "Update") {
				updates = append(updates, c)
			}
		}
		if hyp == "" && len(updates) != 0 || hyp != "" && (len(updates) != 1 || lab.hypotheses[len(lab.hypotheses)-1] != hyp) {
			t.Errorf("hypothesis %q: updates %q", hyp, updates)
		}
		if !strings.HasPrefix(m.Status(), "launched: ") {
			t.Errorf("status %q", m.Status())
		}
	}
}

// TestLaunchFormShowsDirtyChange: same commit, but the tracked files have
// uncommitted changes now that the last launch did not have (or the
// reverse): the form says so; untracked files do not count (the patch
// holds only tracked changes).
func TestLaunchFormShowsDirtyChange(t *testing.T) {
	const head = "a6d51c005def07f605f0dd44ce0da458e97c7d62"
	for _, c := range []struct {
		patch   int
		entries []string
		want    string
	}{
		{0, []string{" M python/pynccl.py"}, "same commit (a6d51c0), but 1 file with uncommitted changes now (it was clean)"},
		{532, nil, "same commit (a6d51c0), but no uncommitted changes now (it had some)"},
		{0, []string{"?? notes.txt"}, "same commit as the last launch (a6d51c0)"},
		{532, []string{"M  python/pynccl.py"}, "same commit (a6d51c0); uncommitted changes then and now"},
	} {
		m, _ := controlled(160, 40, ptr(readyStatus()))
		send(m, ev(5*time.Second, event.ExperimentStart{ID: "e1", Name: "x", Trigger: event.TriggerLaunch}),
			ev(6*time.Second, event.ExperimentFingerprint{Exp: "e1", Fingerprint: event.Fingerprint{Git: &event.GitState{Head: head, PatchBytes: c.patch}}}),
			ev(7*time.Second, event.RepoHead{Short: "a6d51c0", Commit: head, Dirty: len(c.entries), Entries: c.entries}))
		press(m, "L")
		if scr := plain(m); !strings.Contains(scr, c.want) {
			t.Errorf("patch %d, entries %q: the form lacks %q:\n%s", c.patch, c.entries, c.want, scr)
		}
	}
}

// TestLaunchFormSeveralPlanErrors: a plan error of several lines
// (errors.Join: one problem per line) shows each problem, "; " between
// them, not an escaped newline.
func TestLaunchFormSeveralPlanErrors(t *testing.T) {
	m, f := controlled(140, 40, ptr(readyStatus()))
	f.planErr = errors.Join(errors.New("placeholder {model} has no value"), errors.New("placeholder {tp} has no value"))
	press(m, "L")
	box := boxText(m)
	if strings.Contains(box, `\x0a`) || !strings.Contains(box, "{model} has no value; placeholder {tp} has no value") {
		t.Errorf("plan errors in the form:\n%s", box)
	}
	press(m, "enter")
	if st := m.Status(); strings.Contains(st, `\x0a`) || !strings.Contains(st, "; placeholder {tp}") {
		t.Errorf("status %q", st)
	}
}
