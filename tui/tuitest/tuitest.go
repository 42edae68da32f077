// Package tuitest holds the cockpit's test fixtures, shared by the tests
// of tui and of the packages under it (a package's tests cannot import
// another's): a scripted session of three experiments on an 8-GPU H200
// host, SGLang decode lines, key presses, a runner for bubbletea commands
// and the glyph audit every screen's chrome passes. It is imported only by
// tests (cmd/flightdeck's TestImportsPointOneWay checks), and it never
// imports tui, whose own tests use it.
package tuitest

import (
	"fmt"
	"math"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// T0 is the synthetic session start; every test event is at T0 + offset.
var T0 = time.Date(2025, 10, 22, 10, 27, 0, 0, time.UTC)

// At is T0 + d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// OK is a reading of v.
func OK(v float64) event.Reading { return event.Reading{Value: v, Status: event.CellOK} }

// Bad is a reading that is not a number: st, with the raw text raw.
func Bad(st event.CellStatus, raw string) event.Reading { return event.Reading{Status: st, Raw: raw} }

// Txt is a text cell s.
func Txt(s string) event.Text { return event.Text{S: s, Status: event.CellOK} }

// H200 is a busy, healthy H200 on PCIe Gen5 x16 (the DESIGN.md reference
// host). Values vary a little by index so rows are distinguishable.
func H200(i int) event.GPU {
	return event.GPU{
		Index:            i,
		Name:             Txt("NVIDIA H200"),
		BusID:            Txt(fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)),
		UtilGPUPct:       OK(97),
		UtilMemPct:       OK(41),
		MemUsedMiB:       OK(123289.6 + float64(i)),
		MemTotalMiB:      OK(144384),
		PowerDrawW:       OK(612 + float64(i)),
		PowerLimitW:      OK(700),
		TempC:            OK(61 + float64(i%3)),
		SMClockMHz:       OK(1980),
		MemClockMHz:      OK(3201),
		SMClockMax:       OK(1980),
		PState:           Txt("P0"),
		PCIeGenCurrent:   OK(5),
		PCIeGenMax:       OK(5),
		PCIeWidthCurrent: OK(16),
		PCIeWidthMax:     OK(16),
		ClockEvents:      event.ClockEvents{Status: event.CellOK},
		Persistence:      Txt("Enabled"),
		// As the nvidia-smi stream reads it: no PCIe throughput.
		PCIeRxKBs: Bad(event.CellAbsent, ""),
		PCIeTxKBs: Bad(event.CellAbsent, ""),
	}
}

// H200s is a sample of n H200 GPUs, indexes 0 to n-1.
func H200s(n int) event.GPUSample {
	s := event.GPUSample{}
	for i := range n {
		s.GPUs = append(s.GPUs, H200(i))
	}
	return s
}

// DecodeLine is an SGLang decode line like those in the fixtures.
func DecodeLine(i int, tps float64) string {
	return fmt.Sprintf("[2025-10-22 10:%02d:%02d TP0] Decode batch. #running-req: 1, #token: %d, token usage: 0.01, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: 0",
		27+i/60%30, i%60, 1200+i, tps)
}

// LinesOf is a batch of the followed log's lines, 160 bytes apart.
func LinesOf(texts ...string) event.LogLines {
	ls := event.LogLines{Path: "/data/logs/sglang.log"}
	for i, s := range texts {
		ls.Lines = append(ls.Lines, event.LogLine{Offset: int64(i * 160), Text: []byte(s)})
	}
	return ls
}

// DecodeLines is n decode lines from the i-th at the tok/s of RateAt.
func DecodeLines(from, n int) event.LogLines {
	var ts []string
	for i := from; i < from+n; i++ {
		ts = append(ts, DecodeLine(i, RateAt(i)))
	}
	return LinesOf(ts...)
}

// RateAt is a deterministic tok/s series around 82 with a dip.
func RateAt(i int) float64 {
	return 82 + 0.6*math.Sin(float64(i)/3) + map[bool]float64{true: -6, false: 0}[i%50 > 40]
}

// Ev is an event of p at T0 + d.
func Ev(d time.Duration, p event.Payload) event.Event { return event.Event{At: At(d), Data: p} }

// Connected is the connection to root@gpu-box:22 coming up at T0.
func Connected() event.Event {
	return Ev(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: T0})
}

// ReadyStatus is an SGLang server launched at T0 with the profile none,
// ready after 41s, 3m12s before the clock.
func ReadyStatus() event.ServerStatus {
	return event.ServerStatus{Phase: event.PhaseReady, Server: "sglang", PID: 4123, How: server.ByPidfile, Preset: "sglang",
		Profile: "none", LogPath: "/root/.flightdeck/logs/sglang-20251022-102700.log", Port: 30000,
		Since: At(41 * time.Second), LaunchedAt: T0, ReadyAfter: 41 * time.Second, Exit: -1, Health: "/health"}
}

// Result is a concluded tok/s result: the median with its interval lo-hi
// over n samples (95.7 % confidence, 6 dropped as warm-up).
func Result(median, lo, hi float64, n int) event.ExperimentResult {
	return event.ExperimentResult{Metric: "tok/s", N: n, Median: median, Lo: &lo, Hi: &hi, Confidence: 0.957, Dropped: 6}
}

// Session is a scripted session of three experiments, as the lab and the
// log follower publish it: e1 the baseline (killed), e2 nccl-ll-ring
// (relaunched, concluded, with a note), e3 the regressing commit, open,
// its tok/s samples after ready.
func Session() []event.Event {
	fp := func(head, profile string, patch int) event.Fingerprint {
		return event.Fingerprint{At: T0, Hostname: "gpu-box", Kernel: "6.8.0-45-generic",
			Git: &event.GitState{Repo: "/root/sglang", Head: head + strings.Repeat("0", 40-len(head)), Branch: "main", Subject: "Tune NCCL ring",
				PatchSHA256: "3f2a9c1e0b12" + strings.Repeat("a", 52), PatchBytes: patch, Stashes: []string{"stash@{0}: On main: x"}},
			Launch:      &event.LaunchInfo{Preset: "sglang", Profile: profile, Argv: []string{"python", "-m", "sglang.launch_server", "--tp", "8"}},
			CommandLine: "python -m sglang.launch_server --model-path /models/Llama-3.1-8B-Instruct --tp 8",
			Versions: []event.Version{{Name: "driver", Value: "570.86.15"}, {Name: "cuda", Value: "12.8"}, {Name: "nccl", Value: "2.21.5"},
				{Name: "torch", Err: "timed out after 10s"}, {Name: "sglang", Value: "0.4.6"}},
			GPUs:   H200s(8).GPUs,
			Errors: []string{"torch: timed out after 10s"}}
	}
	var evs []event.Event
	add := func(d time.Duration, p event.Payload) { evs = append(evs, Ev(d, p)) }
	rates := func(from time.Duration, base float64, n int) {
		for i := range n {
			add(from+time.Duration(i)*time.Second, event.TokRate{TokPerSec: base + float64(i%5)*0.3, Ranks: 1})
		}
	}
	ready := func(d time.Duration, profile string) {
		st := ReadyStatus()
		st.Profile, st.Since = profile, At(d)
		add(d, st)
	}
	add(10*time.Second, event.ExperimentStart{ID: "e1", Name: "none @ bba2fc4", Hypothesis: "baseline on main", Trigger: event.TriggerLaunch,
		Launch: &event.LaunchInfo{Preset: "sglang", Profile: "none"}})
	add(11*time.Second, event.ExperimentFingerprint{Exp: "e1", Fingerprint: fp("bba2fc4", "none", 0)})
	ready(20*time.Second, "none")
	rates(21*time.Second, 82, 20)
	add(45*time.Second, event.ExperimentEnd{Exp: "e1", Trigger: event.TriggerKill, Result: Result(82.3, 81.9, 82.9, 14)})
	add(47*time.Second, event.ExperimentUpdate{Exp: "e1", Conclusion: "baseline"})
	add(50*time.Second, event.ExperimentStart{ID: "e2", Name: "nccl-ll-ring @ bba2fc4", Trigger: event.TriggerLaunch,
		Hypothesis: "LL protocol with ring cuts all-reduce latency at TP=8", Launch: &event.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring"}})
	add(51*time.Second, event.ExperimentFingerprint{Exp: "e2", Fingerprint: fp("bba2fc4", "nccl-ll-ring", 12345)})
	ready(60*time.Second, "nccl-ll-ring")
	rates(61*time.Second, 88.8, 20)
	add(70*time.Second, event.Note{Text: "NCCL_DEBUG shows LL in use", Exp: "e2"})
	add(85*time.Second, event.ExperimentEnd{Exp: "e2", Trigger: event.TriggerRelaunch, Result: Result(88.9, 88.1, 89.6, 14)})
	add(86*time.Second, event.ExperimentUpdate{Exp: "e2", Conclusion: "LL+ring is 8% faster: keep it"})
	add(90*time.Second, event.ExperimentStart{ID: "e3", Name: "nccl-ll-ring @ a6d51c0", Trigger: event.TriggerLaunch,
		Launch: &event.LaunchInfo{Preset: "sglang", Profile: "nccl-ll-ring"}})
	ready(100*time.Second, "nccl-ll-ring")
	rates(101*time.Second, 61, 20)
	return evs
}

// KeyMsg is the key press k names: "esc", "enter", "ctrl+c", "left" ... or
// one rune.
func KeyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// Space is a press of the space bar.
func Space() tea.KeyPressMsg { return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "} }

// Run runs a command (and a batch's commands) and returns the messages.
func Run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, Run(c)...)
		}
		return out
	case nil:
		return nil
	default:
		return []tea.Msg{msg}
	}
}

// IsQuit says whether cmd quits the program.
func IsQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// BenchDefaults is what sessions.Bencher's Defaults gives: every field
// filled.
func BenchDefaults() event.BenchConfig {
	return event.BenchConfig{Endpoint: event.BenchCompletions, InputLen: 128, OutputLen: 128, Concurrency: 1, Requests: 32, Warmup: 1, Seed: 1, Timeout: 10 * time.Minute}
}

// BenchResult is a finished run against the simulated server: 32
// requests at 88.4 tok/s, one failed.
func BenchResult() *event.BenchResult {
	cfg := BenchDefaults()
	return &event.BenchResult{Config: cfg, Target: "http://127.0.0.1:30000 via gpu-box", Started: At(200 * time.Second), Duration: 46300 * time.Millisecond,
		Completed: 31, Failed: 1, Errors: []event.BenchErrorCount{{Err: "HTTP 503: The server is not ready.\x1b[31m", Count: 1}},
		InputTokens: 31 * 128, OutputTokens: 31 * 128, ReqPerSec: 0.67, OutputTokPerSec: 85.7, TotalTokPerSec: 171.4, Concurrency: 1,
		TTFT: event.Dist{N: 31, Mean: 24.1, Median: 23.8, P90: 26.0, P99: 31.2, Max: 31.9},
		ITL:  event.Dist{N: 31 * 127, Mean: 11.2, Median: 11.2, P90: 11.6, P99: 12.4, Max: 14.0},
		TPOT: event.Dist{N: 31, Mean: 11.2, Median: 11.2, P90: 11.3, P99: 11.4, Max: 11.4},
		E2E:  event.Dist{N: 31, Mean: 1446, Median: 1445, P90: 1452, P99: 1470, Max: 1471}}
}

// BenchEvents is a run b1 on e3 as the Bencher publishes it: start, three
// progress updates, done.
func BenchEvents() []event.Event {
	cfg := BenchDefaults()
	return []event.Event{
		Ev(200*time.Second, event.BenchStarted{ID: "b1", Exp: "e3", Target: "http://127.0.0.1:30000 via gpu-box", Config: cfg}),
		Ev(200*time.Second, event.BenchProgress{ID: "b1", Warmup: true, Total: 32}),
		Ev(220*time.Second, event.BenchProgress{ID: "b1", Done: 12, Failed: 1, Total: 32, Elapsed: 18 * time.Second, InFlight: 1, OutTokens: 1536, TokPerSec: 85.3}),
		Ev(247*time.Second, event.BenchDone{ID: "b1", Exp: "e3", Result: BenchResult()}),
	}
}
