package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
)

func newSized(w, h int, o Options) *Model {
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func send(m *Model, evs ...event.Event) { m.Update(EventsMsg(evs)) }

func press(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

// plain is the stripped screen; screenLines splits it.
func plain(m *Model) string { return ansi.Strip(m.View().Content) }

func screenLines(m *Model) []string { return strings.Split(plain(m), "\n") }

// rowOf returns the stripped table row of GPU idx.
func rowOf(t *testing.T, m *Model, idx string) string {
	t.Helper()
	for _, l := range screenLines(m) {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == idx && !strings.HasPrefix(l, "GPU") {
			return l
		}
	}
	t.Fatalf("no row for GPU %s in:\n%s", idx, plain(m))
	return ""
}

// painted reports whether text appears on screen wrapped in tone t.
func painted(m *Model, t style.Tone, text string) bool {
	return strings.Contains(m.View().Content, t.Render(text))
}

func TestHeaderConnectionStates(t *testing.T) {
	cases := []struct {
		st   event.ConnState
		want string
		tone func(style.Styles) style.Tone
	}{
		{event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected}, "connected", func(s style.Styles) style.Tone { return s.OK }},
		{event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 3, NextTry: at(13 * time.Second),
			Err: errors.New("connection reset")}, "reconnecting (attempt 3, next in 3s)", func(s style.Styles) style.Tone { return s.Warn }},
		{event.ConnState{Host: "root@gpu-box:22", Conn: event.ConnFailed, Err: errors.New("host key mismatch\x1b]0;pwn\x07")},
			"failed: host key mismatch", func(s style.Styles) style.Tone { return s.Crit }},
		{event.ConnState{Host: "root@gpu-box:22", Conn: event.Connecting}, "connecting", func(s style.Styles) style.Tone { return s.Warn }},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			m := newSized(120, 24, Options{Host: "gpu-box"})
			send(m, ev(10*time.Second, c.st))
			head := screenLines(m)[0]
			if !strings.HasPrefix(head, "flightdeck  root@gpu-box:22  "+c.want) {
				t.Errorf("header %q, want state %q", head, c.want)
			}
			if !strings.Contains(m.View().Content, c.tone(m.Styles()).SGR()+c.want) {
				t.Errorf("state %q painted in the wrong tone", c.want)
			}
			if strings.Contains(m.View().Content, "pwn") && strings.Contains(m.View().Content, "\x1b]") {
				t.Error("error text reached the screen unsanitised")
			}
		})
	}
	// The relative time follows the clock messages, not the wall clock.
	m := newSized(120, 24, Options{})
	send(m, ev(10*time.Second, event.ConnState{Conn: event.Reconnecting, Attempt: 1, NextTry: at(13 * time.Second)}))
	m.Update(ClockMsg{Now: at(12 * time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "next in 1s") {
		t.Errorf("header after clock tick: %q", h)
	}
	m.Update(ClockMsg{Now: at(14 * time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "(attempt 1, dialing)") {
		t.Errorf("header after NextTry passed: %q", h)
	}
}

// TestHeaderConnectionErrorIsBrief: a failed or reconnecting connection
// is summarised by remote.Brief (the full error, with fingerprints and
// known_hosts lines, is printed on quit), not cut mid-way through the
// wrapped error chain.
func TestHeaderConnectionErrorIsBrief(t *testing.T) {
	changed := fmt.Errorf("remote: 127.0.0.1:42222: ssh: handshake failed: %w", &remote.HostKeyChangedError{
		Host: "[127.0.0.1]:42222", KeyType: "ssh-ed25519", Fingerprint: "SHA256:new",
		Known: []remote.KnownHostKey{{File: "/root/.ssh/known_hosts", Line: 3, KeyType: "ssh-ed25519", Fingerprint: "SHA256:old"}},
	})
	m := newSized(120, 24, Options{})
	send(m, ev(0, event.ConnState{Host: "root@127.0.0.1:42222", Conn: event.ConnFailed, Err: changed}))
	if h := screenLines(m)[0]; h != "flightdeck  root@127.0.0.1:42222  failed: host key changed (details on quit)" {
		t.Errorf("failed header %q", h)
	}
	// Narrow: the hint goes before the reason is cut.
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  root@127.0.0.1:42222  failed: host key changed" {
		t.Errorf("narrow failed header %q", h)
	}
	send(m, ev(time.Second, event.ConnState{Host: "root@127.0.0.1:42222", Conn: event.ConnFailed}))
	if h := screenLines(m)[0]; h != "flightdeck  root@127.0.0.1:42222  failed" {
		t.Errorf("failed without an error: %q", h)
	}

	m = newSized(120, 24, Options{})
	lost := fmt.Errorf("remote: gpu-box:22: %w", remote.ErrDisconnected)
	send(m, ev(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 2, NextTry: at(3 * time.Second), Err: lost}))
	want := "reconnecting (attempt 2, next in 3s): connection to host lost"
	if h := screenLines(m)[0]; h != "flightdeck  root@gpu-box:22  "+want {
		t.Errorf("reconnecting header %q, want %q", h, want)
	}
}

func TestHeaderServerStateAndHead(t *testing.T) {
	m := newSized(160, 24, Options{Host: "gpu-box", Head: "bba2fc4"})
	if h := screenLines(m)[0]; h != "flightdeck  gpu-box  HEAD bba2fc4" {
		t.Errorf("initial header %q", h)
	}
	send(m, ev(0, event.LogReset{Reason: "truncated"}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  starting") {
		t.Errorf("after reset: %q", h)
	}
	send(m, ev(10*time.Second, event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!"}))
	m.Update(ClockMsg{Now: at(10*time.Second + 3*time.Minute + 12*time.Second)})
	if h := screenLines(m)[0]; !strings.Contains(h, "  sglang ready 3m12s  HEAD bba2fc4") {
		t.Errorf("ready: %q", h)
	}
	m.Update(HeadMsg{Head: "1c0ffee (+1 dirty)"})
	send(m, ev(4*time.Minute, event.ServerFailure{Class: event.FailOOM, Text: "torch.OutOfMemoryError: CUDA out of memory."}))
	if h := screenLines(m)[0]; !strings.Contains(h, "  sglang failed (oom)  HEAD 1c0ffee (+1 dirty)") {
		t.Errorf("failed: %q", h)
	}
	// Throughput without a readiness line (attached mid-run) reads as running.
	m2 := newSized(120, 24, Options{})
	send(m2, ev(0, event.TokRate{TokPerSec: 80, Ranks: 1}))
	if h := screenLines(m2)[0]; !strings.HasSuffix(h, "  running") {
		t.Errorf("running: %q", h)
	}
}

func TestSparkline(t *testing.T) {
	m := newSized(80, 24, Options{})
	vals := []float64{80, 81, 82, 83, 84}
	for _, v := range vals {
		send(m, ev(0, event.TokRate{TokPerSec: v, Ranks: 1}))
	}
	send(m, ev(0, event.TokRate{TokPerSec: 0.3, Dropped: true}), ev(0, event.TokRate{TokPerSec: 0.2, Dropped: true}))
	send(m, ev(0, event.TokRate{TokPerSec: 89, AcceptLength: 2.314, HasAccept: true, Ranks: 8}))
	var line string
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			line = l
		}
	}
	// The default axis: 2.5 % of the run's median (82.5) a level, the
	// median on the middle glyph.
	if !strings.HasSuffix(line, "▄▄▅▅▆ █  89.0 now  median 82.5  accept 2.31  axis 74.2-88.7") {
		t.Errorf("sparkline %q", line)
	}
	// z: the window's min to max.
	press(m, "z")
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			line = l
		}
	}
	if !strings.HasSuffix(line, "▁▂▃▃▄ █  89.0 now  median 82.5  accept 2.31  axis 80.0-89.0") {
		t.Errorf("sparkline on the auto axis %q", line)
	}
	if w := ansi.StringWidth(line); w != 80 {
		t.Errorf("sparkline width %d, want the panel width 80", w)
	}
	for _, r := range line {
		if r > 0x7f && (r < 0x2581 || r > 0x2588) {
			t.Errorf("non-block glyph %q in sparkline", r)
		}
	}
}

func TestSparklineWindowIsPanelWidth(t *testing.T) {
	m := newSized(60, 24, Options{})
	for i := range 500 {
		send(m, ev(0, event.TokRate{TokPerSec: float64(i), Ranks: 1}))
	}
	var line string
	for _, l := range screenLines(m) {
		if strings.HasPrefix(l, "tok/s") {
			line = l
		}
	}
	// 60 - "tok/s " - "  499.0 now" - "  median NNN.N": the median is over
	// exactly the drawn points (the last n values).
	bars := strings.TrimSpace(strings.TrimPrefix(strings.Split(line, "  ")[0], "tok/s"))
	n := len([]rune(bars))
	want := 499 - float64(n-1)/2
	if !strings.Contains(line, "median "+strconv.FormatFloat(want, 'f', 1, 64)) {
		t.Errorf("line %q: %d bars, median should be %.1f", line, n, want)
	}
	if ansi.StringWidth(line) != 60 {
		t.Errorf("width %d", ansi.StringWidth(line))
	}
}

func TestHeaderShowsRepoHeadFromTheStream(t *testing.T) {
	m := newSized(160, 24, Options{Host: "gpu-box"})
	m.Update(EventsMsg{{At: time.Unix(100, 0), Data: event.RepoHead{Short: "3207427", Subject: "Fix PCG MoE Error\x1b[2J", Dirty: 2}}})
	got := ansi.Strip(m.View().Content)
	if !strings.Contains(got, "HEAD 3207427 Fix PCG MoE Error (+2 dirty)") {
		t.Fatalf("header lacks HEAD:\n%s", firstLine(got))
	}
	if strings.Contains(m.View().Content, "\x1b[2J") {
		t.Fatal("commit subject escape sequence reached the screen")
	}
	m.Update(EventsMsg{{At: time.Unix(101, 0), Data: event.RepoUnreadable{Path: "/x", Err: "not a git repository"}}})
	if got := firstLine(ansi.Strip(m.View().Content)); !strings.Contains(got, "HEAD ? (repository unreadable)") {
		t.Fatalf("header after unreadable repo: %s", got)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// Options.Label stays in the header (and window title) before the host,
// whatever host a event.ConnState names.
func TestHeaderLabelStaysBeforeTheHost(t *testing.T) {
	m := newSized(120, 24, Options{Label: "demo", Host: "demo (simulated host)"})
	if h := screenLines(m)[0]; h != "flightdeck  demo  demo (simulated host)" {
		t.Errorf("before any state: %q", h)
	}
	send(m, ev(0, event.ConnState{Host: "root@127.0.0.1:40123", Conn: event.Connected}))
	if h := screenLines(m)[0]; h != "flightdeck  demo  root@127.0.0.1:40123  connected" {
		t.Errorf("after the state: %q", h)
	}
	if got := m.View().WindowTitle; got != "flightdeck demo root@127.0.0.1:40123" {
		t.Errorf("window title %q", got)
	}
	if !painted(m, m.styles.Title, "demo") {
		t.Error("label not painted as a title")
	}
	// Remote-controlled text never reaches the terminal raw; the caller's
	// label is sanitised too.
	e := newSized(120, 24, Options{Label: "x\x1b]0;pwn\x07"})
	if err := onlySGR(e.View().Content); err != nil {
		t.Error(err)
	}
	// Without a label the header is as before.
	n := newSized(120, 24, Options{})
	send(n, ev(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected}))
	if h := screenLines(n)[0]; h != "flightdeck  root@gpu-box:22  connected" {
		t.Errorf("no label: %q", h)
	}
}

// A narrow header drops the fields that do not fit whole (a bare "HEAD"
// or "rea" says nothing) rather than cutting them; HEAD takes the host's
// place when it fits there (the window title names the host).
func TestNarrowHeaderDropsFieldsWhole(t *testing.T) {
	m := newSized(60, 24, Options{Head: "e7b9c70 [CI] Raise the nightly benchmark timeout"})
	send(m, ev(0, event.ConnState{Host: "root@127.0.0.1:42133", Conn: event.Connected}),
		ev(0, event.ServerReady{Server: "sglang"}))
	m.Update(ClockMsg{Now: at(19 * time.Second)})
	if h := screenLines(m)[0]; h != "flightdeck  connected  sglang ready 19s  HEAD e7b9c70" {
		t.Errorf("60 columns: %q", h)
	}
	// A healthy "connected" gives way before the server's state (a
	// connection in trouble would not: see connSeg).
	m.Update(tea.WindowSizeMsg{Width: 50, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  sglang ready 19s  HEAD e7b9c70" {
		t.Errorf("50 columns: %q", h)
	}
	// The host is cut rather than dropped: it says where this is.
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 24})
	if h := screenLines(m)[0]; h != "flightdeck  root@127" {
		t.Errorf("20 columns: %q", h)
	}
}

// scanFailures runs a serverlog.Scanner over a fixture in testdata and
// returns the Failure events it produces, in order, and its Primary.
func scanFailures(t *testing.T, name string) ([]event.ServerFailure, event.ServerFailure) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var s serverlog.Scanner
	var out []event.ServerFailure
	err = serverlog.ScanLines(f, func(line []byte, n int) {
		s.Feed(line, n, func(p event.Payload) {
			if x, ok := p.(event.ServerFailure); ok {
				out = append(out, x)
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.Primary()
	if !ok {
		t.Fatalf("%s: the scanner found no failure", name)
	}
	return out, p
}

// TestHeaderFailureIsThePrimary: the header names the class
// `flightdeck parse log` calls primary (serverlog.Scanner.Primary), not
// the latest Failure event: for the EngineDeadError crash that is
// engine-dead, not the traceback after it; for vLLM's NCCL teardown it is
// nccl, not the "out of memory" it wraps.
func TestHeaderFailureIsThePrimary(t *testing.T) {
	fixtures := []string{
		"vllm-crash-enginedead-v1.txt",
		"vllm-nccl-cuda-failure-oom-2025-05.txt",
		"sglang-crash-illegal-memory-access-2025-02.txt",
		"vllm-oom-v1-enginecore.txt",
	}
	differs := 0
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			fails, primary := scanFailures(t, name)
			if fails[len(fails)-1].Class != primary.Class {
				differs++
			}
			m := newSized(160, 24, Options{})
			send(m, ev(0, event.LogReset{Reason: "truncated"}))
			for i, f := range fails {
				send(m, ev(time.Duration(i)*time.Second, f))
			}
			want := "failed (" + string(primary.Class) + ")"
			if h := screenLines(m)[0]; !strings.Contains(h, want) {
				t.Errorf("header %q, want %q (events %v)", h, want, classesOf(fails))
			}
		})
	}
	if differs == 0 {
		t.Error("no fixture has a latest failure other than the primary: the test proves nothing")
	}

	// A new run (event.LogReset) forgets the previous run's failures.
	m := newSized(160, 24, Options{})
	nccl, _ := scanFailures(t, "vllm-nccl-cuda-failure-oom-2025-05.txt")
	dead, _ := scanFailures(t, "vllm-crash-enginedead-v1.txt")
	for _, f := range nccl {
		send(m, ev(0, f))
	}
	send(m, ev(time.Second, event.LogReset{Reason: "truncated"}))
	if h := screenLines(m)[0]; strings.Contains(h, "failed") {
		t.Errorf("after a reset: %q", h)
	}
	for _, f := range dead {
		send(m, ev(2*time.Second, f))
	}
	if h := screenLines(m)[0]; !strings.Contains(h, "failed (engine-dead)") {
		t.Errorf("second run: %q", h)
	}
	// Without a reset the first root cause stays, as in the parser.
	for _, f := range nccl {
		send(m, ev(3*time.Second, f))
	}
	if h := screenLines(m)[0]; !strings.Contains(h, "failed (nccl)") {
		t.Errorf("a root cause after engine-dead: %q", h)
	}
	send(m, ev(4*time.Second, event.ServerFailure{Class: event.FailOOM, Text: "CUDA out of memory"}))
	if h := screenLines(m)[0]; !strings.Contains(h, "failed (nccl)") {
		t.Errorf("a later root cause replaced the first: %q", h)
	}
}

func classesOf(fs []event.ServerFailure) []event.ServerFailureClass {
	var out []event.ServerFailureClass
	for _, f := range fs {
		out = append(out, f.Class)
	}
	return out
}

// TestSparklineRuns: a relaunch ends a run. The old bars stay (the climb
// from 62.5 to 89 is visible), but "now" waits for the new run's first
// figure and the median covers only the new run; a kill leaves no "now".
func TestSparklineRuns(t *testing.T) {
	m := newSized(100, 24, Options{})
	tokLine := func() string {
		for _, l := range screenLines(m) {
			if strings.HasPrefix(l, "tok/s") {
				return l
			}
		}
		return ""
	}
	press(m, "z") // the auto axis: a flat run fills the top
	for range 20 {
		send(m, ev(0, event.TokRate{TokPerSec: 62.5, Ranks: 1}))
	}
	send(m, ev(time.Second, event.ServerStatus{Phase: event.PhaseKilled, Exit: -1}))
	if l := tokLine(); !strings.Contains(l, "  - now  median -") || !strings.Contains(l, "▁") && !strings.Contains(l, "█") {
		t.Errorf("after the kill: %q", l)
	}
	send(m, ev(2*time.Second, event.ServerStatus{Phase: event.PhaseLaunching, Exit: -1}))
	for _, v := range []float64{88.5, 89, 89.5} {
		send(m, ev(3*time.Second, event.TokRate{TokPerSec: v, Ranks: 1}))
	}
	if l := tokLine(); !strings.HasSuffix(l, "89.5 now  median 89.0  axis 62.5-89.5 (auto)") {
		t.Errorf("after the relaunch: %q", l)
	}
	// Around the run's median (the default axis) the climb is as tall as
	// the scale goes: 62.5 is far under -10 % of 89.
	press(m, "z", "z")
	if l := tokLine(); !strings.HasSuffix(l, strings.Repeat("▁", 20)+" ▅▅▅  89.5 now  median 89.0  axis 80.1-95.7") {
		t.Errorf("after the relaunch, around the run's median: %q", l)
	}
}
