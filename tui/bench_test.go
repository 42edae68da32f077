package tui

import (
	"strings"
	"testing"
	"time"
)

// Goals (issue 2): View of 8 GPUs + 5,000-line log + full sparkline at
// 200x60 ≤ 1 ms median; 72 GPUs ≤ 3 ms.

func benchView(b *testing.B, nGPU int, fresh bool) {
	benchViewAt(b, 200, 60, nGPU, fresh, false)
}

// benchViewAt renders a w×h scene; wrap turns log wrapping on (at 200
// columns the decode lines fit, at 80 each takes two rows).
func benchViewAt(b *testing.B, w, h, nGPU int, fresh, wrap bool) {
	m := scene(w, h, nGPU, 5000, Options{})
	if wrap {
		press(m, "w")
	}
	s := h200s(nGPU)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if fresh {
			// Every row changes, as with a new nvidia-smi sample: no cache hit.
			i++
			for j := range s.GPUs {
				s.GPUs[j].PowerDrawW.Value = float64(600 + (i+j)%100)
			}
			m.Update(EventsMsg{ev(time.Duration(i)*time.Second, s)})
		}
		_ = m.View()
	}
}

func BenchmarkView8GPUs(b *testing.B)              { benchView(b, 8, false) }
func BenchmarkView72GPUs(b *testing.B)             { benchView(b, 72, false) }
func BenchmarkSampleAndView8GPUs(b *testing.B)     { benchView(b, 8, true) }
func BenchmarkSampleAndView72GPUs(b *testing.B)    { benchView(b, 72, true) }
func BenchmarkView8GPUsWrap(b *testing.B)          { benchViewAt(b, 200, 60, 8, false, true) }
func BenchmarkView72GPUsWrap(b *testing.B)         { benchViewAt(b, 200, 60, 72, false, true) }
func BenchmarkSampleAndView8GPUsWrap(b *testing.B) { benchViewAt(b, 200, 60, 8, true, true) }
func BenchmarkView8GPUsWrap80x24(b *testing.B)     { benchViewAt(b, 80, 24, 8, false, true) }
func BenchmarkView8GPUsWrapLongLines(b *testing.B) {
	// Every visible line is 4 kB of mixed-width text: the wrap's worst case.
	m := scene(200, 60, 8, 0, Options{})
	press(m, "w")
	long := strings.Repeat("décodé 宽 token/s ", 240)
	var ls []string
	for range 200 {
		ls = append(ls, long)
	}
	m.Update(EventsMsg{ev(0, linesOf(ls...))})
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkView8GPUsFiltered(b *testing.B) {
	m := scene(200, 60, 8, 5000, Options{})
	press(m, "/")
	typeText(m, "token: 6")
	press(m, "enter")
	for b.Loop() {
		_ = m.View()
	}
}

// BenchmarkUpdate100LogLines is one bridge batch of 100 decode lines into
// a full 10,000-line ring, followed by the frame it causes.
func BenchmarkUpdate100LogLines(b *testing.B) {
	m := scene(200, 60, 8, 10000, Options{})
	batch := EventsMsg{ev(0, decodeLines(20000, 100))}
	b.ReportAllocs()
	for b.Loop() {
		m.Update(batch)
	}
}

func BenchmarkUpdate100LogLinesFiltered(b *testing.B) {
	m := scene(200, 60, 8, 10000, Options{})
	press(m, "/")
	typeText(m, "NCCL")
	press(m, "enter")
	batch := EventsMsg{ev(0, decodeLines(20000, 100))}
	b.ReportAllocs()
	for b.Loop() {
		m.Update(batch)
	}
}

// BenchmarkViewGitPanel renders the git panel (a checkout mid-merge with
// six dirty files, two stashes, a reflog) in the log's place, 8 GPUs,
// 200x60.
func BenchmarkViewGitPanel(b *testing.B) {
	st := dirtyStatus()
	m, _ := gitScene(200, 60, &st, Options{})
	press(m, "g")
	if !m.git.Open {
		b.Fatal("panel not open")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.View()
	}
}
