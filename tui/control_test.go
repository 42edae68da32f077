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
	if !m.DialogOpen() {
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
			if cmd != nil || m.DialogOpen() {
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
		if m.DialogOpen() || strings.Contains(plain(m), "Kill sglang") {
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
	if cmd := press(m, "L"); cmd != nil || m.Status() != "not connected" || m.DialogOpen() {
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
// lower-priority fields go whole, and HEAD takes the host's place; a long
// stage is cut, not the state.
func TestHeaderServerStatusFits(t *testing.T) {
	m, _ := controlled(80, 24, ptr(readyStatus()))
	if h := screenLines(m)[0]; h != "flightdeck  connected  sglang pid 4123 ready 3m12s  profile none  HEAD bba2fc4" {
		t.Errorf("80 columns: %q", h)
	}
	m.srv.next = "nccl-ll-ring"
	if h := screenLines(m)[0]; h != "flightdeck  connected  sglang ready 3m12s  profile -> nccl-ll-ring  HEAD bba2fc4" {
		t.Errorf("80 columns with a pick: %q", h)
	}
	send(m, ev(4*time.Minute, event.ServerStatus{Phase: event.PhaseStopping, Server: "sglang", PID: 4123, Since: at(4 * time.Minute), Exit: -1,
		Note: "waiting for GPU memory to be freed: GPU 0 holds 120.4 GiB, GPU 1 holds 120.4 GiB, GPU 2 holds 98.0 GiB"}))
	h := screenLines(m)[0]
	if h != "flightdeck  connected  sglang pid 4123 stopping: waiting for GPU m  HEAD bba2fc4" {
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
	go func() { done <- Bridge{Msgs: msgs, Screen: discardScreen}.Run(context.Background(), m, runOpts()...) }()
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
