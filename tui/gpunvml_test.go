package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/panels/gpus"
)

// nvmlSample is h200s(8) as the NVML sampler reads it with --pcie: PCIe
// throughput (KB/s) and the processes. GPUs 0-5 each run one TP worker;
// GPU 6 a worker and a small helper (named by path); GPU 7 none, with
// 78 GiB still in use (a killed server's leftover).
func nvmlSample() event.GPUSample {
	s := h200s(8)
	for i := range s.GPUs {
		g := &s.GPUs[i]
		g.UUID = txt(fmt.Sprintf("GPU-%08x", 0xa0+i))
		g.PCIeRxKBs, g.PCIeTxKBs = ok(float64(1230+i*41)), ok(412)
	}
	s.GPUs[2].PCIeRxKBs = ok(25_000_000) // loading weights: 24414 MiB/s
	s.GPUs[5].PCIeTxKBs = bad(event.CellNotSupported, "[Not Supported]")
	for i := range 7 {
		s.Apps = append(s.Apps, event.ComputeApp{PID: 4100 + i, Name: txt(fmt.Sprintf("sglang::sched%d", i)), UsedMiB: ok(120000), BusID: s.GPUs[i].BusID, UUID: s.GPUs[i].UUID})
	}
	s.Apps = append(s.Apps, event.ComputeApp{PID: 5000, Name: txt("/usr/bin/python3"), UsedMiB: ok(512), BusID: s.GPUs[6].BusID, UUID: s.GPUs[6].UUID})
	s.GPUs[7].MemUsedMiB = ok(80000)
	return s
}

// nvmlScene is the standard screen sampled through NVML.
func nvmlScene(w, h int) *Model {
	m := scene(w, h, 8, 100, Options{})
	send(m, ev(4*time.Second, srcNVML), ev(5*time.Second, nvmlSample()))
	return m
}

// Golden screens of NVML samples: the rx/tx and procs columns at 200
// columns; at 80, rx/tx dropped and procs as counts. Regenerate with go
// test -update.
func TestNVMLColumnsGolden(t *testing.T) {
	t.Run("80x24", func(t *testing.T) { golden.RequireEqual(t, plain(nvmlScene(80, 24))) })
	t.Run("200x60", func(t *testing.T) { golden.RequireEqual(t, plain(nvmlScene(200, 60))) })
}

func TestNVMLScreensHaveNoAmbiguousGlyphs(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		auditModel(t, fmt.Sprintf("nvml %dx%d", sz[0], sz[1]), nvmlScene(sz[0], sz[1]))
	}
}

// Every width from 1 to 220 columns: no line wider than the terminal,
// and every value column shown whole (a cut "24414/0.4" would mislead).
func TestNVMLEveryWidthFits(t *testing.T) {
	m := nvmlScene(200, 24)
	for w := 1; w <= 220; w++ {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		for i, l := range strings.Split(m.View().Content, "\n") {
			if n := ansi.StringWidth(l); n > w {
				t.Fatalf("%d columns: line %d is %d wide: %q", w, i, n, ansi.Strip(l))
			}
		}
		if w < 40 {
			continue
		}
		row := rowOf(t, m, "2")
		head := screenLines(m)[1]
		if strings.Contains(head, "rx/tx") != strings.Contains(row, "24414/0.4") {
			t.Errorf("%d columns: header %q, row %q", w, head, row)
		}
	}
}

func TestRxTxColumn(t *testing.T) {
	m := nvmlScene(200, 30)
	head := screenLines(m)[1]
	if !strings.Contains(head, "PCIe     rx/tx MiB/s  procs") {
		t.Fatalf("header %q", head)
	}
	for idx, want := range map[string]string{
		"0": "1.2/0.4",   // 1230 KB/s is 1.2 MiB/s
		"1": "1.2/0.4",   // 1271
		"2": "24414/0.4", // 25e6 KB/s, whole MiB/s
		"5": "1.4/n/s",   // a side the driver does not offer
		"7": "1.5/0.4      0, 78G held",
	} {
		if row := rowOf(t, m, idx); !strings.Contains(row, "Gen5x16  "+want) {
			t.Errorf("GPU %s: %q lacks %q", idx, row, want)
		}
	}
	// The nvidia-smi stream: no column, the table as it was.
	plainM := scene(200, 30, 8, 100, Options{})
	if h := screenLines(plainM)[1]; strings.Contains(h, "rx/tx") || strings.Contains(h, "procs") {
		t.Errorf("nvidia-smi header %q", h)
	}
	// Sampled but not read yet ([N/A] until the poller's first read):
	// the column is there, with tokens, never 0.
	s := h200s(2)
	for i := range s.GPUs {
		s.GPUs[i].PCIeRxKBs, s.GPUs[i].PCIeTxKBs = bad(event.CellNA, "[N/A]"), bad(event.CellNA, "[N/A]")
	}
	m = newSized(200, 24, Options{})
	send(m, ev(0, s))
	if row := rowOf(t, m, "1"); !strings.Contains(row, "Gen5x16  N/A/N/A") {
		t.Errorf("unread PCIe: %q", row)
	}
	// Narrow: it is the first column to go.
	m = nvmlScene(120, 30)
	if h := screenLines(m)[1]; !strings.Contains(h, "rx/tx") || !strings.Contains(h, "name") {
		t.Errorf("120 columns: %q", h)
	}
	m.Update(tea.WindowSizeMsg{Width: 105, Height: 30})
	if h := screenLines(m)[1]; strings.Contains(h, "rx/tx") || !strings.Contains(h, "name") || !strings.Contains(h, "procs") {
		t.Errorf("105 columns: %q", h)
	}
	if row := rowOf(t, m, "0"); !strings.Contains(row, "1 sglang::sched0") {
		t.Errorf("105 columns lost the process name: %q", row)
	}
}

func TestProcsColumn(t *testing.T) {
	m := nvmlScene(200, 30)
	for idx, want := range map[string]string{
		"0": "1 sglang::sched0",
		"6": "2 sglang::sched6", // the one using the most memory
		"7": "0, 78G held",
	} {
		if row := rowOf(t, m, idx); !strings.Contains(row, want) {
			t.Errorf("GPU %s: %q lacks %q", idx, row, want)
		}
	}
	st := m.Styles()
	if !painted(m, st.Warn, "0, 78G held") {
		t.Error("memory held by no process is not flagged")
	}
	if painted(m, st.Warn, "1 sglang::sched0") {
		t.Error("a GPU with its process is flagged")
	}
	// Narrow: the count alone.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	if row := rowOf(t, m, "6"); !strings.Contains(row, "Gen5x16  2 ") || strings.Contains(row, "sglang") {
		t.Errorf("80 columns, GPU 6: %q", row)
	}
	if row := rowOf(t, m, "7"); !strings.Contains(row, "0 78G") {
		t.Errorf("80 columns, GPU 7: %q", row)
	}
	// The nvidia-smi stream again (Apps nil): the column goes.
	send(m, ev(6*time.Second, h200s(8)))
	if h := screenLines(m)[1]; strings.Contains(h, "procs") {
		t.Errorf("procs column after an nvidia-smi sample: %q", h)
	}
}

// launched is a server launch from the cockpit.
func launched(d time.Duration) event.Event {
	return ev(d, event.ServerLaunched{Record: event.LaunchRecord{PID: 4242, Launch: event.LaunchInfo{Preset: "sglang-tp8", At: at(d)}}})
}

// A forced kill logs Xid 45 on every GPU; the relaunch clears them, and
// the critical Xid stays.
func TestXidClearedByLaunch(t *testing.T) {
	m := scene(120, 30, 8, 100, Options{})
	send(m, ev(10*time.Second, xid(3, 79)), ev(11*time.Second, xid(3, 13)))
	for i := range 8 {
		send(m, ev(20*time.Second, xid(i, 45)))
	}
	for idx, want := range map[string]string{"0": "Xid 45", "3": "Xid 79 +2", "7": "Xid 45"} {
		if row := rowOf(t, m, idx); !strings.Contains(row, want) {
			t.Errorf("before the launch, GPU %s: %q lacks %q", idx, row, want)
		}
	}
	send(m, launched(30*time.Second))
	for _, idx := range []string{"0", "1", "5", "7"} {
		if row := rowOf(t, m, idx); strings.Contains(row, "Xid") {
			t.Errorf("after the launch, GPU %s: %q", idx, row)
		}
	}
	if row := rowOf(t, m, "3"); !strings.Contains(row, "Xid 79") || strings.Contains(row, "Xid 79 +") {
		t.Errorf("after the launch, GPU 3 keeps its critical Xid alone: %q", row)
	}
	if !painted(m, m.Styles().Crit, "3") {
		t.Error("GPU 3's index is no longer critical")
	}
	if painted(m, m.Styles().Warn, "0") {
		t.Error("GPU 0's index still warns")
	}
	// The log keeps the lines: they are history.
	if n := strings.Count(plain(m), "Xid 45: preemptive cleanup"); n != 8 {
		t.Errorf("%d Xid 45 lines in the log after the launch, want 8", n)
	}
	// A new application fault after the launch counts from one.
	send(m, ev(40*time.Second, xid(0, 13)))
	if row := rowOf(t, m, "0"); !strings.Contains(row, "Xid 13") || strings.Contains(row, "Xid 13 +") {
		t.Errorf("new fault after the launch: %q", row)
	}
}

// A non-critical Xid leaves its row ten minutes of data time after the
// GPU's latest one; later ones restart the count.
func TestXidExpiresAfterTenMinutes(t *testing.T) {
	m := scene(120, 30, 8, 100, Options{})
	send(m, ev(10*time.Second, xid(2, 31)), ev(70*time.Second, xid(2, 13)), ev(80*time.Second, xid(4, 94)))
	clock := func(d time.Duration) { m.Update(ClockMsg{Now: at(d)}) }
	clock(70*time.Second + gpus.XidAppHold - time.Millisecond)
	if row := rowOf(t, m, "2"); !strings.Contains(row, "Xid 13 +1") {
		t.Errorf("just before the hold ends: %q", row)
	}
	clock(70*time.Second + gpus.XidAppHold)
	if row := rowOf(t, m, "2"); strings.Contains(row, "Xid") {
		t.Errorf("after the hold: %q", row)
	}
	if painted(m, m.Styles().Warn, "2") {
		t.Error("GPU 2's index still warns")
	}
	clock(5 * time.Hour)
	if row := rowOf(t, m, "4"); !strings.Contains(row, "Xid 94") {
		t.Errorf("a critical Xid expired: %q", row)
	}
	// A new one counts from one; samples meanwhile keep it.
	send(m, ev(5*time.Hour+time.Second, xid(2, 43)), ev(5*time.Hour+2*time.Second, h200s(8)))
	if row := rowOf(t, m, "2"); !strings.Contains(row, "Xid 43") || strings.Contains(row, "Xid 43 x") {
		t.Errorf("a later Xid: %q", row)
	}
	// Event times alone decide the count: a model that saw no clock in
	// between (a replay that seeks) counts the same.
	caught := scene(120, 30, 8, 100, Options{})
	send(caught, ev(10*time.Second, xid(2, 31)), ev(70*time.Second, xid(2, 13)), ev(80*time.Second, xid(4, 94)),
		ev(5*time.Hour+time.Second, xid(2, 43)), ev(5*time.Hour+2*time.Second, h200s(8)))
	if a, b := rowOf(t, caught, "2"), rowOf(t, m, "2"); a != b {
		t.Errorf("seeking: %q, playing: %q", a, b)
	}
}

// Identical Xids within a second share one log line with a count, even
// with the server's lines between them; another GPU, another code or a
// later second gets its own.
func TestXidStormGroupedInTheLog(t *testing.T) {
	m := scene(160, 40, 8, 100, Options{})
	base := 10 * time.Second
	for k := range 37 {
		d := base + time.Duration(k)*20*time.Millisecond
		send(m, ev(d, xid(5, 13)))
		if k == 10 {
			send(m, ev(d, decodeLines(100, 2)))
		}
		if k%10 == 0 {
			send(m, ev(d, xid(6, 13)))
		}
	}
	send(m, ev(base+500*time.Millisecond, xid(5, 31)), ev(base+time.Second, xid(5, 13)))
	body := logBody(m)
	var xids []string
	for _, l := range body {
		if strings.Contains(l, "Xid") {
			xids = append(xids, strings.TrimSpace(l))
		}
	}
	// Each line has the time of its group's first Xid.
	want := []string{
		"[2025-10-22 10:27:10] flightdeck: GPU 5 (00000000:68:00.0) Xid 13 x37: graphics engine exception",
		"[2025-10-22 10:27:10] flightdeck: GPU 6 (00000000:78:00.0) Xid 13 x4: graphics engine exception",
		"[2025-10-22 10:27:10] flightdeck: GPU 5 (00000000:68:00.0) Xid 31: GPU memory page fault",
		"[2025-10-22 10:27:11] flightdeck: GPU 5 (00000000:68:00.0) Xid 13: graphics engine exception", // a second after the first
	}
	if len(xids) != len(want) {
		t.Fatalf("Xid lines %q, want %d", xids, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(xids[i], want[i]) {
			t.Errorf("line %d: %q, want %q...", i, xids[i], want[i])
		}
	}
	// The server's lines keep their place after the first Xid line.
	if i := indexOf(body, "Xid 13 x37"); i < 0 || !strings.Contains(body[i+2], "#token: 1300") {
		t.Errorf("log order:\n%s", strings.Join(body, "\n"))
	}
	// The row counts every one.
	if row := rowOf(t, m, "5"); !strings.Contains(row, "Xid 13 +38") {
		t.Errorf("GPU 5 row: %q", row)
	}
	auditModel(t, "xid storm", m)
}

func indexOf(lines []string, sub string) int {
	for i, l := range lines {
		if strings.Contains(l, sub) {
			return i
		}
	}
	return -1
}

// A group's line that has left the ring takes later counts with it: no
// panic, no line reappearing.
func TestXidGroupLineLeftTheRing(t *testing.T) {
	m := newSized(120, 30, Options{LogLines: 16})
	send(m, ev(0, h200s(2)), ev(time.Second, xid(1, 13)), ev(time.Second, decodeLines(0, 40)),
		ev(1500*time.Millisecond, xid(1, 13)))
	if row := rowOf(t, m, "1"); !strings.Contains(row, "Xid 13 +1") {
		t.Errorf("the row counts both: %q", row)
	}
	if n := strings.Count(strings.Join(logBody(m), "\n"), "Xid 13"); n != 0 {
		t.Errorf("%d Xid lines in the log, want the one that left the ring gone", n)
	}
}

// An agent naming ever new GPUs cannot grow the table: indices past
// gpus.MaxXidIndex and bus ids past gpus.MaxXidBusMarks are only log lines, and
// the GPUs the host has keep their marks.
func TestXidMarksBounded(t *testing.T) {
	m := newSized(120, 30, Options{})
	send(m, ev(0, h200s(2)))
	var evs []event.Event
	for i := range 5000 {
		d := time.Duration(i) * time.Millisecond
		evs = append(evs, ev(d, event.Xid{Index: 1000 + i, Code: 79}),
			ev(d, event.Xid{Index: -1, BusID: fmt.Sprintf("0000:%02x:%02x.0", i/256, i%256), Code: 79}))
	}
	evs = append(evs, ev(11*time.Second, xid(1, 48)), ev(11*time.Second, xid(0, 13)))
	send(m, evs...)
	marks, groups := m.gpus.XidState()
	if n := marks; n != gpus.MaxXidBusMarks+2 {
		t.Errorf("%d marks, want %d by bus and the 2 real GPUs", n, gpus.MaxXidBusMarks)
	}
	if n := groups; n > gpus.MaxXidGroups {
		t.Errorf("%d open log groups, want at most %d", n, gpus.MaxXidGroups)
	}
	if row := rowOf(t, m, "1"); !strings.Contains(row, "Xid 48") {
		t.Errorf("GPU 1: %q", row)
	}
	if row := rowOf(t, m, "0"); !strings.Contains(row, "Xid 13") {
		t.Errorf("GPU 0: %q", row)
	}
	if !strings.Contains(plain(m), "GPU 0 (00000000:18:00.0) Xid 13") || !strings.Contains(plain(m), "GPU 5999 Xid 79") {
		t.Errorf("log lines missing:\n%s", plain(m))
	}
}

// BenchmarkSampleAndViewNVML8GPUs: a new NVML sample (PCIe throughput and
// 8 processes, every row changed) and a frame, 200x60; compare with
// BenchmarkSampleAndView8GPUs (the nvidia-smi stream's rows).
func BenchmarkSampleAndViewNVML8GPUs(b *testing.B) {
	m := nvmlScene(200, 60)
	s := nvmlSample()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for j := range s.GPUs {
			s.GPUs[j].PowerDrawW.Value = float64(600 + (i+j)%100)
		}
		m.Update(EventsMsg{ev(time.Duration(i)*time.Second, s)})
		_ = m.View()
	}
}

// BenchmarkXidStorm: one Xid of a storm (the same GPU and code, grouped
// into one log line per second) applied to the model, without a frame.
func BenchmarkXidStorm(b *testing.B) {
	m := nvmlScene(200, 60)
	x := xid(5, 13)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		m.Update(ev(10*time.Second+time.Duration(i)*3*time.Millisecond, x))
	}
}
