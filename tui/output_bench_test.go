package tui

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/screen"
)

// The output economy of issue 7: what the cockpit writes to the terminal
// per second of a steady 1 Hz stream, through a real tea.Program and the
// cockpit's screen (package screen), counted by a terminal that only counts bytes.

// steadyStream makes the events of a steady decode, one second at a time:
// an 8-GPU sample whose utilisation, power, temperature, clocks and memory
// move every second; one or two SGLang decode lines (the EAGLE-3 fixture's
// format, with a new timestamp, token count, accept length and
// throughput); the tok/s points parsed from those lines; and the clock.
type steadyStream struct {
	rnd      *rand.Rand
	template string // a real decode line
	tokens   int
	temp     [8]float64
}

// decodeFields are the parts of a decode line that change from line to line.
var decodeFields = regexp.MustCompile(`^\[[0-9-]+ [0-9:]+ (TP0)\]|#token: [0-9]+|accept len: [0-9.]+|accept rate: [0-9.]+|gen throughput \(token/s\): [0-9.]+`)

func newSteadyStream(tb testing.TB) *steadyStream {
	tb.Helper()
	raw, err := os.ReadFile("testdata/sglang-decode-eagle3-2025-10.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var tmpl string
	for line := range bytes.Lines(raw) {
		if tp, ok := serverlog.ParseSGLangDecode(bytes.TrimRight(line, "\n")); ok && tp.TokPerSec > 100 {
			tmpl = string(bytes.TrimRight(line, "\n"))
			break
		}
	}
	if tmpl == "" {
		tb.Fatal("no decode line in the fixture")
	}
	s := &steadyStream{rnd: rand.New(rand.NewPCG(7, 11)), template: tmpl, tokens: 1200}
	for i := range s.temp {
		s.temp[i] = 60 + float64(i%3)
	}
	return s
}

// line is a decode line at t with the given throughput and accept length.
func (s *steadyStream) line(t time.Time, tps, accept float64) string {
	s.tokens += int(tps)
	return decodeFields.ReplaceAllStringFunc(s.template, func(f string) string {
		switch {
		case f[0] == '[':
			return "[" + t.Format("2006-01-02 15:04:05") + " TP0]"
		case f[1] == 't': // #token
			return fmt.Sprintf("#token: %d", s.tokens)
		case f[7] == 'l': // accept len
			return fmt.Sprintf("accept len: %.2f", accept)
		case f[7] == 'r': // accept rate
			return fmt.Sprintf("accept rate: %.2f", accept/4)
		}
		return fmt.Sprintf("gen throughput (token/s): %.2f", tps)
	})
}

// second returns the events of second i and the clock after them.
func (s *steadyStream) second(i int) (EventsMsg, ClockMsg) {
	now := at(time.Duration(i) * time.Second)
	sample := event.GPUSample{}
	for g := range 8 {
		d := h200(g)
		d.UtilGPUPct = ok(float64(94 + s.rnd.IntN(7)))
		d.UtilMemPct = ok(float64(35 + s.rnd.IntN(10)))
		d.PowerDrawW = ok(float64(580 + s.rnd.IntN(110)))
		s.temp[g] = min(max(s.temp[g]+float64(s.rnd.IntN(3)-1), 58), 68)
		d.TempC = ok(s.temp[g])
		if s.rnd.IntN(10) == 0 {
			d.SMClockMHz = ok(1965)
		}
		d.MemUsedMiB = ok(123289.6 + float64(g) + float64(s.rnd.IntN(64)))
		sample.GPUs = append(sample.GPUs, d)
	}
	evs := EventsMsg{{At: now, Data: sample}}
	lines := event.LogLines{Path: "/data/logs/sglang.log"}
	for k := range 1 + i%2 { // one line, then two, then one...
		tps := 165 + 10*math.Sin(float64(2*i+k)/5) + s.rnd.Float64()*4
		accept := 1.8 + s.rnd.Float64()*0.5
		text := s.line(now, tps, accept)
		lines.Lines = append(lines.Lines, event.LogLine{Offset: int64(s.tokens) * 3, Text: []byte(text)})
		tp, _ := serverlog.ParseSGLangDecode([]byte(text))
		evs = append(evs, event.Event{At: now, Data: event.TokRate{TokPerSec: tp.TokPerSec, AcceptLength: tp.AcceptLength, HasAccept: true, Ranks: 1}})
	}
	evs = append(evs, event.Event{At: now, Data: lines})
	return evs, ClockMsg{Now: now}
}

// frameMsg is one source's share of a second: the GPU sample, the log
// lines with their tok/s points, or the clock. The live cockpit gets them
// from three independent sources (the GPU poller, the log follower, the
// clock), so each makes its own frame: the most bytes a second can cost.
type frameMsg struct {
	id   int64
	msgs []tea.Msg
}

// framedModel wraps the cockpit for the measurement: the model's own
// real-time clock is not started (the stream brings the clock), and View
// records which frame it drew and whether the screen changed (an
// unchanged screen writes nothing).
type framedModel struct {
	m        *Model
	last     int64
	prev     string
	rendered atomic.Int64
	changed  atomic.Bool
}

func (f *framedModel) Init() tea.Cmd { return nil }

func (f *framedModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case frameMsg:
		for _, m := range msg.msgs {
			f.m.Update(m)
		}
		f.last = msg.id
		return f, nil
	case ClockMsg:
		return f, nil
	}
	_, cmd := f.m.Update(msg)
	return f, cmd
}

func (f *framedModel) View() tea.View {
	v := f.m.View()
	screen := v.WindowTitle + "\x00" + v.Content
	if f.rendered.Load() != f.last {
		f.changed.Store(screen != f.prev)
	}
	f.prev = screen
	f.rendered.Store(f.last)
	return v
}

// countingTerminal is the terminal: it counts the bytes and writes.
type countingTerminal struct {
	mu     sync.Mutex
	bytes  int64
	writes int64
}

func (c *countingTerminal) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += int64(len(p))
	c.writes++
	return len(p), nil
}

func (c *countingTerminal) counts() (bytes, writes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.writes
}

// steadyRun is a cockpit program at w x h on a counting terminal, its
// screen already full: 300 s of history (the sparkline's window, the log
// area) applied before the program starts.
type steadyRun struct {
	tb     testing.TB
	stream *steadyStream
	f      *framedModel
	term   *countingTerminal
	p      *screen.Program
	done   chan error
	next   int   // the next second of the stream
	id     int64 // the last frame sent
}

func startSteady(tb testing.TB, w, h int, profile colorprofile.Profile) *steadyRun {
	tb.Helper()
	s := newSteadyStream(tb)
	m := New(Options{Host: "root@gpu-box:22", LogPath: "/data/logs/sglang.log", Head: "bba2fc4 (+3 dirty)", Theme: ThemeDark})
	m.Update(EventsMsg{
		{At: at(-300 * time.Second), Data: event.ConnState{Host: "root@gpu-box:22", Conn: event.Connected, Since: at(-300 * time.Second)}},
		{At: at(-299 * time.Second), Data: event.ServerReady{Server: "sglang", Text: "The server is fired up and ready to roll!"}},
	})
	for i := -298; i <= 0; i++ {
		evs, clock := s.second(i)
		m.Update(evs)
		m.Update(clock)
	}
	r := &steadyRun{tb: tb, stream: s, f: &framedModel{m: m}, term: &countingTerminal{}, done: make(chan error, 1), next: 1}
	p, err := screen.NewProgram(r.f, screen.Target{Out: r.term, Env: []string{"TERM=tmux-256color"}, Width: w, Height: h, Profile: profile},
		tea.WithInput(nil), tea.WithoutSignalHandler())
	if err != nil {
		tb.Fatal(err)
	}
	r.p = p
	go func() {
		_, err := r.p.Run()
		r.done <- err
	}()
	// The first frame: the whole screen.
	r.f.changed.Store(true)
	r.waitFrame(0, 0)
	return r
}

// waitFrame waits until the model has drawn frame id and, when the
// screen changed, the terminal has had more than writes writes. The
// screen writes a frame in one Write at once (at most screen.MinFrame
// after the one before); the deadline is for a broken program only.
func (r *steadyRun) waitFrame(id, writes int64) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, n := r.term.counts()
		if r.f.rendered.Load() >= id && (n > writes || !r.f.changed.Load()) {
			return
		}
		if time.Now().After(deadline) {
			r.tb.Fatalf("frame %d: not written", id)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// send makes one frame of msgs and waits for it.
func (r *steadyRun) send(msgs ...tea.Msg) {
	_, w0 := r.term.counts()
	r.id++
	r.p.Send(frameMsg{id: r.id, msgs: msgs})
	r.waitFrame(r.id, w0)
}

// step sends the next second, a frame per source, and returns the bytes
// written for it.
func (r *steadyRun) step() int64 {
	evs, clock := r.stream.second(r.next)
	r.next++
	b0, _ := r.term.counts()
	r.send(evs[:1]) // the GPU sample
	r.send(evs[1:]) // the log lines and their tok/s points
	r.send(clock)   // the clock
	b1, _ := r.term.counts()
	return b1 - b0
}

func (r *steadyRun) stop() {
	r.p.Quit()
	if err := <-r.done; err != nil {
		r.tb.Errorf("program: %v", err)
	}
}

// BenchmarkSteadyOutput reports the bytes written to the terminal per
// second of a steady 1 Hz stream (B/s; one op is one second of the
// stream), at three sizes, in truecolor (the most bytes per colour) and
// 256 colours, with tmux's TERM.
func BenchmarkSteadyOutput(b *testing.B) {
	for _, sz := range [][2]int{{200, 60}, {100, 30}, {80, 24}} {
		for _, p := range []colorprofile.Profile{colorprofile.TrueColor, colorprofile.ANSI256} {
			b.Run(fmt.Sprintf("%dx%d/%v", sz[0], sz[1], p), func(b *testing.B) {
				r := startSteady(b, sz[0], sz[1], p)
				defer r.stop()
				for range 5 { // settle: the first seconds after the full draw
					r.step()
				}
				var total, peak int64
				b.ResetTimer()
				for range b.N {
					n := r.step()
					total += n
					peak = max(peak, n)
				}
				b.StopTimer()
				b.ReportMetric(float64(total)/float64(b.N), "B/s")
				b.ReportMetric(float64(peak), "peak-B/s")
			})
		}
	}
}

// TestSteadyOutputBudget: at 200x60 in truecolor, a steady 1 Hz stream
// costs at most 4 KiB per second on the wire, so the cockpit does not
// redraw the screen for every sample (the full frame is about 11 KB).
// The count is deterministic (one frame per second, each written whole);
// the median over a minute keeps a rare coalesced frame from failing it.
func TestSteadyOutputBudget(t *testing.T) {
	const budget = 4096
	r := startSteady(t, 200, 60, colorprofile.TrueColor)
	defer r.stop()
	full, _ := r.term.counts()
	for range 5 {
		r.step()
	}
	var per []int64
	var total int64
	for range 60 {
		n := r.step()
		per = append(per, n)
		total += n
	}
	slices.Sort(per)
	median := per[len(per)/2]
	t.Logf("200x60 truecolor: first frame %d B; steady median %d B/s, mean %d B/s, max %d B/s", full, median, total/int64(len(per)), per[len(per)-1])
	if median > budget {
		t.Errorf("steady output %d B/s (median of 60 s) is over the %d B/s budget", median, budget)
	}
	if median*4 > full {
		t.Errorf("a steady second (%d B) costs more than a quarter of the full frame (%d B): it redraws too much", median, full)
	}
}
