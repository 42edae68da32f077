package journal_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/tui"
	"github.com/flightdeck-dev/flightdeck/tui/panels/logtail"
)

var start = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func reading(v float64) event.Reading { return event.Reading{Value: v} }

func h200(i int, rng *rand.Rand, busy bool) event.GPU {
	util, power, sm := 0.0, 75+rng.Float64()*5, 345.0
	if busy {
		util, power, sm = float64(95+rng.IntN(6)), 600+rng.Float64()*30, 1980
	}
	return event.GPU{
		Index: i, Name: event.Text{S: "NVIDIA H200"}, BusID: event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10)},
		UtilGPUPct: reading(util), UtilMemPct: reading(util / 2), MemUsedMiB: reading(131072), MemTotalMiB: reading(143771),
		PowerDrawW: reading(float64(int(power*100)) / 100), PowerLimitW: reading(700), TempC: reading(float64(40 + rng.IntN(3))),
		SMClockMHz: reading(sm), MemClockMHz: reading(3201), SMClockMax: reading(1980), FanPct: event.Reading{Status: event.CellNA, Raw: "[N/A]"},
		PState: event.Text{S: "P0"}, PCIeGenCurrent: reading(5), PCIeGenMax: reading(5), PCIeWidthCurrent: reading(16), PCIeWidthMax: reading(16),
		ClockEvents: event.ClockEvents{Mask: event.ReasonSWPowerCap}, Persistence: event.Text{S: "Enabled"}, ECCMode: event.Text{S: "Enabled"},
		PCIeRxKBs: event.Reading{Status: event.CellAbsent}, PCIeTxKBs: event.Reading{Status: event.CellAbsent}, // the nvidia-smi stream's
	}
}

const readyLine = "[2026-11-29 09:00:00] The server is fired up and ready to roll!"

// longSession is a synthetic journal of dur: 8 GPUs at 2 Hz with one
// going missing, one appearing for a minute, one lost for good, whole-host
// failures and stale streams; more log lines than the log ring with
// ready and failure highlights, resets and lines that are not UTF-8; more
// tok/s figures than their ring with idle gaps; relaunches, kills,
// experiments (one closed by the next start without an end), notes, git
// and connection changes.
func longSession(dur time.Duration, control bool) []event.Event {
	evs := session(dur)
	if control {
		return evs
	}
	// A cockpit without server control: no server-status or launches.
	kept := evs[:0]
	for _, e := range evs {
		switch e.Data.(type) {
		case event.ServerStatus, event.ServerLaunched:
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

func session(dur time.Duration) []event.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	var evs []event.Event
	add := func(at time.Duration, p event.Payload) { evs = append(evs, event.Event{At: start.Add(at), Data: p}) }
	const logPath = "/var/log/fd/sglang.log"
	var off int64
	lineNo := 0
	logLine := func(at time.Duration, text []byte) event.LogLine {
		l := event.LogLine{Offset: off, Text: text}
		off += int64(len(text)) + 1
		lineNo++
		return l
	}
	add(0, event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: start})
	add(0, event.RepoHead{Path: "/srv/sglang", Commit: strings.Repeat("ab", 20), Short: "abababa", Subject: "baseline", Branch: "main"})
	expN := 0
	relaunch := func(at time.Duration, endPrev bool, pid int) {
		if expN > 0 && endPrev {
			add(at, event.ExperimentEnd{Exp: fmt.Sprintf("e%d", expN), Trigger: event.TriggerRelaunch,
				Result: event.ExperimentResult{Metric: "tok/s", Median: 1500 + float64(expN), N: 6}})
		}
		add(at, event.ServerStatus{Phase: event.PhaseKilled, Server: "sglang", PID: pid - 1, Since: start.Add(at), Exit: -1})
		add(at+time.Millisecond, event.ServerLaunched{Record: event.LaunchRecord{PID: pid, Launch: event.LaunchInfo{Preset: "sim", Profile: fmt.Sprintf("p%d", pid%3), At: start.Add(at)}}})
		add(at+2*time.Millisecond, event.ServerStatus{Phase: event.PhaseLaunching, Server: "sglang", PID: 0, Since: start.Add(at), LaunchedAt: start.Add(at), Exit: -1})
		if pid%3 != 1 {
			add(at+3*time.Millisecond, event.LogReset{Path: logPath, Reason: "truncated"})
			off = 0
		}
		expN++
		add(at+4*time.Millisecond, event.ExperimentStart{ID: fmt.Sprintf("e%d", expN), Name: fmt.Sprintf("run %d", expN), Trigger: event.TriggerLaunch})
		add(at+5*time.Millisecond, event.Note{Text: fmt.Sprintf("relaunch %d", expN), Exp: fmt.Sprintf("e%d", expN)})
		if expN%2 == 0 {
			add(at+6*time.Millisecond, event.Repeat{Exp: fmt.Sprintf("e%d", expN), Series: fmt.Sprintf("e%d", expN-1), I: 2, N: 2})
		}
	}
	benchN := 0
	relaunch(time.Second, true, 100)
	readyPending := time.Duration(-1)
	busy := false
	tick := 500 * time.Millisecond
	for at := tick; at < dur; at += tick {
		sec := int(at / time.Second)
		min := int(at / time.Minute)
		// Server life: every 20 minutes a relaunch (every third one
		// without an exp-end: the next start closes it).
		if at%(20*time.Minute) == 0 && (at <= 60*time.Minute || at == 160*time.Minute) {
			relaunch(at, min%60 != 40, 100+min)
			busy = false
			readyPending = at + 30*time.Second
			add(at+time.Second, event.ServerStatus{Phase: event.PhaseLoading, Server: "sglang", PID: 100 + min, Stage: "loading weights", Since: start.Add(at), Exit: -1})
		}
		if readyPending >= 0 && at >= readyPending {
			// The ready event and its line arrive in either order.
			if min%2 == 0 {
				add(at, event.ServerReady{Server: "sglang", Text: readyLine})
			}
			add(at, event.LogLines{Path: logPath, Lines: []event.LogLine{logLine(at, []byte(readyLine))}})
			if min%2 == 1 {
				add(at, event.ServerReady{Server: "sglang", Text: readyLine})
			}
			add(at, event.ServerStatus{Phase: event.PhaseReady, Server: "sglang", PID: 100 + min, Since: start.Add(at), Health: "/health", Exit: -1})
			readyPending, busy = -1, true
		}
		// GPUs.
		idle := busy && min%10 == 9 && sec%60 < 30 // a quiet spell
		lost := at >= dur*5/6
		switch {
		case at >= 30*time.Minute && at < 30*time.Minute+10*time.Second:
			// nvidia-smi prints only a failure: no samples.
			add(at, event.GPUFailure{Class: event.GPUFailNoDevices, Line: "No devices were found"})
			if at == 30*time.Minute+5*time.Second {
				add(at, event.GPUStale{LastSample: start.Add(30 * time.Minute), Missed: 3, Reason: "no sample for 3 intervals"})
			}
		default:
			s := event.GPUSample{At: start.Add(at)}
			for i := range 8 {
				if i == 5 && at >= 20*time.Minute && at < 25*time.Minute {
					s.Missing = append(s.Missing, 5)
					continue
				}
				if i == 3 && busFail(at) && at < 62*time.Minute {
					s.Missing = append(s.Missing, 3)
					continue
				}
				g := h200(i, rng, busy && !idle)
				if i == 6 && lost || i == 3 && busFail(at) {
					// The second episode of GPU 3: it reports, lost.
					g.Lost, g.TempC = true, event.Reading{Status: event.CellLost, Raw: "[GPU is lost]"}
				}
				s.GPUs = append(s.GPUs, g)
			}
			if at >= 40*time.Minute && at < 41*time.Minute {
				s.GPUs = append(s.GPUs, h200(9, rng, busy))
			}
			if at >= 10*time.Minute && at < 12*time.Minute {
				// NVML samples: PCIe throughput and the processes, which
				// change once.
				for i := range s.GPUs {
					s.GPUs[i].PCIeRxKBs, s.GPUs[i].PCIeTxKBs = reading(float64(rng.IntN(9000))), reading(120)
				}
				s.Apps = []event.ComputeApp{{PID: 4100, Name: event.Text{S: "python3"}, UsedMiB: reading(80000), BusID: event.Text{S: "00000000:18:00.0"}}}
				if at >= 11*time.Minute {
					s.Apps = append(s.Apps, event.ComputeApp{PID: 4200, Name: event.Text{S: "python3"}, UsedMiB: reading(512), BusID: event.Text{S: "00000000:28:00.0"}})
				}
			}
			add(at, s)
			if busFail(at) {
				add(at, event.GPUFailure{Class: "unknown-error", BusID: "0000:48:00.0", Reason: "Unknown Error", Line: "Unable to determine the device handle for GPU0000:48:00.0: Unknown Error"})
			}
			if lost && sec%30 == 0 && at%time.Second == 0 {
				add(at, event.GPUFailure{Class: event.GPUFailLost, BusID: "0000:78:00.0", Reason: "GPU is lost", NeedsReboot: true})
			}
		}
		// GPU sampling (issue 8): the source changes twice; Xids on a
		// GPU by index, by bus id, on none, and on the GPU that is lost.
		switch at {
		case tick:
			add(at, event.GPUSource{Mode: event.SourceNVML, Detail: "NVML 12.550.54.15"})
		case 20*time.Minute + 10*time.Second:
			add(at, event.Xid{Index: 2, BusID: "00000000:38:00.0", Code: 13})
		case 22 * time.Minute:
			add(at, event.Xid{Index: -1, BusID: "0000:58:00.0", Code: 74})
		case 22*time.Minute + time.Second:
			add(at, event.Xid{Index: 2, Code: 48})
		case 30*time.Minute + 6*time.Second:
			add(at, event.Xid{Index: -1, Code: 31})
		case 35 * time.Minute, 35*time.Minute + tick:
			// A storm of application Xids on GPU 1 with log lines
			// between: grouped per second into one log line each.
			for k := range 40 {
				add(at+time.Duration(k)*7*time.Millisecond, event.Xid{Index: 1, BusID: "00000000:28:00.0", Code: 13})
			}
		case 35*time.Minute + 2*tick:
			add(at, event.Xid{Index: 1, BusID: "00000000:28:00.0", Code: 13})
			add(at, event.Xid{Index: 1, BusID: "00000000:28:00.0", Code: 43})
		case 40*time.Minute - tick:
			// A forced kill before the relaunch at 40 minutes: Xid 45 on
			// every GPU, cleared by the launch.
			for i := range 8 {
				add(at, event.Xid{Index: i, BusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10), Code: 45})
			}
		case 50 * time.Minute:
			add(at, event.GPUSource{Mode: event.SourceNvidiaSMI, Fallback: "agent exited: exit status 1, stderr: GLIBC_2.34 not found"})
		case 90 * time.Minute:
			add(at, event.GPUSource{Mode: event.SourceAgent, Detail: "agent 0.8.0 (cached)"})
		case 95 * time.Minute:
			// The agent's NVML blocked: the stale banner waits for the
			// agent (a sample clears it).
			add(at, event.GPUStale{LastSample: start.Add(at - time.Second), Missed: 2, Reason: "NVML call blocked for 2s"})
		case dur * 5 / 6:
			add(at, event.Xid{Index: 6, BusID: "00000000:78:00.0", Code: 79})
		}
		// Throughput, once a second.
		if at%time.Second == 0 && busy {
			r := event.TokRate{TokPerSec: 1400 + rng.Float64()*200, Ranks: 2, AcceptLength: 3 + rng.Float64(), HasAccept: sec%7 == 0}
			if idle {
				r = event.TokRate{TokPerSec: 0.5, Ranks: 1, Dropped: true}
			}
			add(at, r)
		}
		// Log lines: a few per tick while up, some not UTF-8, and a
		// failure (with its highlight) now and then.
		if busy {
			var ls []event.LogLine
			for range 1 + rng.IntN(4) {
				text := fmt.Appendf(nil, "[2026-11-29 %s TP0] Decode batch. #running-req: %d, #token: %d, gen throughput (token/s): %.2f",
					start.Add(at).Format("15:04:05"), 60+rng.IntN(8), 80000+rng.IntN(9000), 1400+rng.Float64()*200)
				if lineNo%997 == 0 {
					text = append(text, 0xff, 0xfe)
				}
				ls = append(ls, logLine(at, text))
			}
			if (sec%600 == 300 || sec == 65*60) && at%time.Second == 0 {
				fail := "[2026-11-29 TP3] RuntimeError: NCCL error: unhandled system error"
				add(at, event.ServerFailure{Class: event.FailNCCL, Text: fail, Rank: "TP3"})
				ls = append(ls, logLine(at, []byte(fail)))
			}
			add(at, event.LogLines{Path: logPath, Lines: ls})
		}
		if sec%300 == 17 && at%time.Second == 0 {
			add(at, event.LogNotice{Path: logPath, Class: event.NoticeMissing, Text: "cannot open it"})
		}
		// Git and connection.
		if sec%600 == 60 && at%time.Second == 0 {
			add(at, event.GitStatus{Path: "/srv/sglang", Branch: "main", Head: event.Commit{ID: strings.Repeat("cd", 20), Short: fmt.Sprintf("c%06d", sec), Subject: "work"},
				Files: []event.GitFile{{Path: fmt.Sprintf("f%d.py", sec), X: 'M', Y: ' ', Added: sec % 9, Deleted: 1}}, Read: start.Add(at)})
		}
		if sec%1800 == 900 && at%time.Second == 0 {
			add(at, event.GitMoved{From: "aa", To: "bb", FromShort: "aa", ToShort: fmt.Sprintf("b%d", sec), Action: "pull", Forward: 2, At: start.Add(at)})
			add(at, event.RepoHead{Path: "/srv/sglang", Commit: strings.Repeat("cd", 20), Short: fmt.Sprintf("c%d", sec), Subject: "pulled", Branch: "main", Dirty: sec % 4})
		}
		if sec%2400 == 1200 && at%time.Second == 0 {
			add(at, event.GitAction{Op: "stash", Args: []string{"wip"}, Snapshot: "s1", From: "aa", To: "aa", Branch: "main", Output: "Saved working directory", Started: start.Add(at), Took: time.Second})
			add(at, event.Key{Key: "s", Action: "stash"})
		}
		if at == 70*time.Minute {
			add(at, event.ConnState{Host: "root@gpu-box:22", Conn: event.Reconnecting, Attempt: 1, Since: start.Add(at), NextTry: start.Add(at + 2*time.Second)})
		}
		if at == 70*time.Minute+3*time.Second {
			add(at, event.ConnState{Conn: event.Connected, Since: start.Add(at)})
		}
		// Measures: a benchmark run every 15 minutes (one fails), the
		// baseline marked, moved and cleared.
		if at%(15*time.Minute) == 7*time.Minute {
			benchN++
			add(at, event.BenchStarted{ID: fmt.Sprintf("b%d", benchN), Exp: fmt.Sprintf("e%d", expN), Target: "http://127.0.0.1:30000", Config: event.BenchConfig{Requests: 32, Concurrency: 4}})
		}
		if at%(15*time.Minute) == 8*time.Minute {
			d := event.BenchDone{ID: fmt.Sprintf("b%d", benchN), Exp: fmt.Sprintf("e%d", expN), Result: &event.BenchResult{Completed: 32, OutputTokPerSec: 1400 + float64(benchN),
				TTFT: event.Dist{N: 32, Median: 40}, Requests: []event.BenchRequest{{TTFT: 40, E2E: 900, OutputTokens: 128, Usage: true}}}}
			if benchN%3 == 0 {
				d.Result, d.Err = nil, "connect: connection refused"
			}
			add(at, d)
		}
		switch at {
		case 21 * time.Minute:
			add(at, event.Baseline{Exp: "e2"})
		case 45 * time.Minute:
			add(at, event.Baseline{Exp: fmt.Sprintf("e%d", expN)})
		case 100 * time.Minute:
			add(at, event.Baseline{})
		case 120 * time.Minute:
			add(at, event.Baseline{Exp: "e1"})
		}
		if at%(17*time.Minute) == 0 {
			add(at, event.Note{Text: fmt.Sprintf("note at %s", at), Exp: fmt.Sprintf("e%d", expN)})
		}
	}
	return evs
}

// busFail is when GPU 3 is missing with a failure naming its bus: twice,
// with a sample that clears it in between.
func busFail(at time.Duration) bool {
	return at >= 60*time.Minute && at < 62*time.Minute || at >= 62*time.Minute+time.Second && at < 64*time.Minute
}

func newModel(size tea.WindowSizeMsg) *tui.Model {
	m := tui.New(tui.Options{ReadOnly: true, Host: "gpu-box", Theme: tui.ThemeDark})
	m.Update(size)
	return m
}

func screen(m *tui.Model) string {
	v := m.View()
	return v.WindowTitle + "\n" + v.Content
}

// firstDiff is the first differing line of two screens.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n caught %q\n played %q", i, x, y)
		}
	}
	return ""
}

func TestCatchUpMatchesPlaying(t *testing.T) {
	dur := 3 * time.Hour
	if testing.Short() || journal.RaceEnabled {
		dur = 70 * time.Minute
	}
	for _, control := range []bool{true, false} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) { catchUpMatches(t, longSession(dur, control), dur) })
	}
}

// writeLong writes evs to a new journal (created start) in a temporary
// directory and returns its path; any error fails the test.
func writeLong(t *testing.T, evs []event.Event) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "long.jsonl")
	w, err := journal.Create(path, event.SessionHeader{Created: start, Host: "gpu-box"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func catchUpMatches(t *testing.T, evs []event.Event, dur time.Duration) {
	j, err := journal.Open(writeLong(t, evs))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if p := j.Problems(); p.Any() {
		t.Fatalf("problems: %s", p)
	}
	if logtail.DefaultLogLines > journal.CatchUpLogLines {
		t.Fatalf("the replay's log ring (%d) is bigger than CatchUp's (%d)", logtail.DefaultLogLines, journal.CatchUpLogLines)
	}
	size := tea.WindowSizeMsg{Width: 140, Height: 44}
	// Times to look at: every few minutes, around the events that change
	// state, and at random.
	var times []time.Duration
	for at := time.Duration(0); at <= j.Duration()+time.Second; at += 7*time.Minute + 13*time.Second {
		times = append(times, at)
	}
	for _, m := range []time.Duration{time.Second, 11 * time.Minute, 20*time.Minute + 10*time.Second, 22*time.Minute + time.Second, 50 * time.Minute, 90 * time.Minute, 20 * time.Minute, 20*time.Minute + 30*time.Second, 22 * time.Minute, 25*time.Minute + time.Second,
		30*time.Minute + 4*time.Second, 30*time.Minute + 7*time.Second, 30*time.Minute + 11*time.Second, 40*time.Minute + 30*time.Second,
		41*time.Minute + 10*time.Second, 60*time.Minute + 30*time.Second, 62*time.Minute + 500*time.Millisecond, 63 * time.Minute, 70*time.Minute + time.Second,
		65*time.Minute + 2*time.Second, 100 * time.Minute, 110 * time.Minute, 160*time.Minute + 10*time.Second,
		dur*5/6 + 31*time.Second, dur - time.Second, 50*time.Minute + 2*time.Second, 90*time.Minute + 2*time.Second, 95 * time.Minute,
		30*time.Minute + 10*time.Second, 35 * time.Minute, 35*time.Minute + 100*time.Millisecond, 35*time.Minute + 600*time.Millisecond,
		35*time.Minute + time.Second, 40*time.Minute - 400*time.Millisecond, 40 * time.Minute, 45*time.Minute + time.Second} {
		times = append(times, m, m+time.Microsecond, m+time.Millisecond)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		times = append(times, time.Duration(rng.Int64N(int64(j.Duration()))))
	}
	sortDurations(times)

	played := newModel(size)
	var at time.Duration = -time.Hour
	compared := 0
	for n, tt := range times {
		more, err := j.Events(at, tt)
		if err != nil {
			t.Fatal(err)
		}
		played.Update(tui.EventsMsg(more))
		at = tt
		now := tui.ClockMsg{Now: j.Start().Add(tt)}
		played.Update(now)

		caught := newModel(size)
		cu, err := j.CatchUp(tt)
		if err != nil {
			t.Fatal(err)
		}
		caught.Update(tui.EventsMsg(cu))
		caught.Update(now)
		if d := firstDiff(screen(caught), screen(played)); d != "" {
			t.Errorf("at %v (%d of the events, %d caught up): %s", tt, j.Len(), len(cu), d)
			continue
		}
		if n%6 != 0 {
			compared++
			continue
		}
		// The oldest lines of the log ring.
		top := tea.KeyPressMsg{Code: tea.KeyHome}
		caught.Update(top)
		if d := firstDiff(screen(caught), screen(topOf(played, size, j, tt))); d != "" {
			t.Errorf("at %v, top of the log: %s", tt, d)
			continue
		}
		compared++
	}
	if compared < len(times)*9/10 {
		t.Fatalf("only %d of %d screens compared equal", compared, len(times))
	}
}

// After a seek the replay keeps playing from the caught-up model: the
// state behind the screen must match too.
func TestCatchUpThenPlay(t *testing.T) {
	dur := 2 * time.Hour
	if testing.Short() || journal.RaceEnabled {
		dur = 70 * time.Minute
	}
	path := writeLong(t, longSession(dur, true))
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	size := tea.WindowSizeMsg{Width: 120, Height: 40}
	for _, c := range []struct{ from, to time.Duration }{
		{19*time.Minute + 50*time.Second, 21 * time.Minute},
		{29*time.Minute + 59*time.Second, 31 * time.Minute},
		{59*time.Minute + 59*time.Second, 63 * time.Minute},
		{39*time.Minute + 59*time.Second, 41*time.Minute + 30*time.Second},
		{dur - 20*time.Minute, dur},
		{64 * time.Minute, 66 * time.Minute},
		{35*time.Minute + 100*time.Millisecond, 35*time.Minute + 2*time.Second},
		{39*time.Minute + 59*time.Second, 40*time.Minute + time.Second},
		{29 * time.Minute, 45 * time.Minute},
		{59*time.Minute + 30*time.Second, 75 * time.Minute},
	} {
		caught := newModel(size)
		cu, _ := j.CatchUp(c.from)
		caught.Update(tui.EventsMsg(cu))
		rest, _ := j.Events(c.from, c.to)
		caught.Update(tui.EventsMsg(rest))
		played := newModel(size)
		all, _ := j.Events(-time.Hour, c.to)
		played.Update(tui.EventsMsg(all))
		now := tui.ClockMsg{Now: j.Start().Add(c.to)}
		caught.Update(now)
		played.Update(now)
		if d := firstDiff(screen(caught), screen(played)); d != "" {
			t.Errorf("caught up to %v, played to %v: %s", c.from, c.to, d)
		}
		// The panels too: experiments (x) and git (g).
		for _, k := range []tea.KeyPressMsg{{Code: 'x', Text: "x"}, {Code: 'x', Text: "x"}, {Code: 'g', Text: "g"}, {Code: tea.KeyEscape}, {Code: tea.KeyHome}} {
			caught.Update(k)
			played.Update(k)
			if d := firstDiff(screen(caught), screen(played)); d != "" {
				t.Errorf("caught up to %v, played to %v, after %s: %s", c.from, c.to, k.Text, d)
			}
		}
	}
}

// topOf is a model like played, scrolled to the top of its log: a fresh
// one fed every event up to t (the played one keeps following).
func topOf(played *tui.Model, size tea.WindowSizeMsg, j *journal.Journal, t time.Duration) *tui.Model {
	m := newModel(size)
	all, _ := j.Events(-time.Hour, t)
	m.Update(tui.EventsMsg(all))
	m.Update(tui.ClockMsg{Now: j.Start().Add(t)})
	m.Update(tea.KeyPressMsg{Code: tea.KeyHome})
	return m
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for k := i; k > 0 && d[k] < d[k-1]; k-- {
			d[k], d[k-1] = d[k-1], d[k]
		}
	}
}
