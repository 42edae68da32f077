package bisect

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	sbisect "github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/tui/style"
	"github.com/flightdeck-dev/flightdeck/tui/tuitest"
)

// fed is a panel fed the fixture bisect's records and progress.
func fed() *Panel {
	p := NewPanel()
	for _, e := range tuitest.BisectEvents(0) {
		p.Apply(e.Data, e.At)
	}
	return p
}

// decided sets the verdicts and p-values a decision procedure would
// have: the panel draws what the State holds.
func decided(p *Panel) {
	st := p.State()
	set := func(short string, v sbisect.Verdict, pv float64) {
		c := st.Commit(tuitest.BisectFull(short))
		c.Verdict, c.P = v, pv
	}
	set("bba2fc4", sbisect.Good, 0)
	set("a6d51c0", sbisect.Bad, 0.0004)
	set("65b09bf", sbisect.Bad, 0.012)
	set("2d3e4f5", sbisect.Good, 0.31)
	set("3207427", sbisect.Unknown, 0.09)
	p.SetState(st)
}

func TestRowsOfDecidedState(t *testing.T) {
	p := fed()
	decided(p)
	rows := Rows(p.State(), false, tuitest.BisectFull("65b09bf"))
	want := []struct{ short, tag, launches, median, delta, verdict, p string }{
		{"bba2fc4", "good", "3", "82.1", "", "good", ""},
		{"2d3e4f5", "", "2", "82.0", "-0.1%", "good", "0.31"},
		{"3207427", "", "1+1f", "82.0", "-0.1%", "unknown", "0.09"},
		{"65b09bf", "culprit", "2", "75.4", "-8.2%", "bad", "0.012"},
		{"a6d51c0", "bad", "3", "75.4", "-8.2%", "bad", "<0.001"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		got := []string{r.Short, r.Tag, r.Launches, r.Median, r.Delta, r.Verdict, r.P}
		exp := []string{w.short, w.tag, w.launches, w.median, w.delta, w.verdict, w.p}
		if strings.Join(got, "|") != strings.Join(exp, "|") {
			t.Errorf("row %d: %q, want %q", i, got, exp)
		}
	}
	// Six launches give benchmath a finite 95 % interval.
	st, err := sbisect.New(tuitest.BisectCommits(), sbisect.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{80, 81, 82, 83, 84, 85} {
		if err := st.Record(tuitest.BisectFull("bba2fc4"), v); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		wide bool
		want string
	}{{false, "+-3%"}, {true, "[80.0, 85.0]"}} {
		if got := Rows(st, c.wide, "")[0].CI; got != c.want {
			t.Errorf("wide %v CI %q, want %q", c.wide, got, c.want)
		}
	}
}

// TestPanelGoldenWithVerdicts: the panel over a State whose verdicts are
// set, compact and wide.
func TestPanelGoldenWithVerdicts(t *testing.T) {
	st := style.Plain()
	for _, c := range []struct {
		name string
		w, h int
	}{{"80x12", 80, 12}, {"200x14", 200, 14}} {
		t.Run(c.name, func(t *testing.T) {
			p := fed()
			decided(p)
			p.SetSize(c.w, c.h)
			lines := p.View(nil, &st)
			if len(lines) != c.h {
				t.Errorf("%d lines, want %d", len(lines), c.h)
			}
			var b strings.Builder
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > c.w {
					t.Errorf("line %d wide: %q", w, l)
				}
				b.WriteString(ansi.Strip(l) + "\n")
			}
			golden.RequireEqual(t, b.String())
		})
	}
}

func TestPanelApply(t *testing.T) {
	p := fed()
	if !p.Running() || p.ID() != tuitest.BisectID || p.MeanLaunch() != (90*11+40)*time.Second/12 {
		t.Errorf("running %v id %q mean %v", p.Running(), p.ID(), p.MeanLaunch())
	}
	if pr, ok := p.Progress(); !ok || pr.Samples != 7 {
		t.Errorf("progress %+v %v", pr, ok)
	}
	p.Apply(event.BisectEnd{ID: "other", Outcome: event.BisectCulprit}, tuitest.T0)
	if !p.Running() {
		t.Error("another bisect's end ended this one")
	}
	p.Apply(tuitest.BisectEnd(event.BisectCulprit), tuitest.T0)
	if p.Running() {
		t.Error("still running after its end")
	}
	if _, ok := p.Progress(); ok {
		t.Error("progress after the end")
	}
	// A launch outside the range does not fold: the panel says so.
	s := tuitest.BisectStart()
	s.ID = "b2"
	p.Apply(s, tuitest.T0)
	p.Apply(event.BisectLaunch{ID: "b2", Commit: "f00", Value: 1}, tuitest.T0)
	p.SetSize(80, 6)
	pl := style.Plain()
	if scr := ansi.Strip(strings.Join(p.View(nil, &pl), "\n")); !strings.Contains(scr, "the records do not fold: bisect b2: bisect: commit f00 is not in the range") {
		t.Errorf("fold error:\n%s", scr)
	}
}

func TestEstimateText(t *testing.T) {
	for _, c := range []struct {
		steps, launches int
		mean            time.Duration
		want            string
	}{
		{0, 0, time.Minute, "launches and time: unknown (no estimate for this range)"},
		{6, 20, 0, "~6 steps, ~20 launches, time unknown (no launch measured yet)"},
		{6, 20, 5 * time.Minute, "~6 steps, ~20 launches, ~1h40m at 5m00s a launch"},
		{1, 1, 90 * time.Second, "~1 step, ~1 launch, ~1m30s at 1m30s a launch"},
	} {
		if got := EstimateText(c.steps, c.launches, c.mean); got != c.want {
			t.Errorf("EstimateText(%d, %d, %v) = %q, want %q", c.steps, c.launches, c.mean, got, c.want)
		}
	}
}

// TestBanner: one line while the bisect runs and the panel is closed;
// the ETA falls back to the launches left times their mean.
func TestBanner(t *testing.T) {
	p := fed()
	b := p.Banners()
	if len(b) != 1 || b[0].Text != "bisect b1: 4 left, 3207427 measuring 7/10, ETA 6m00s  (i shows it)" {
		t.Errorf("banner %+v", b)
	}
	p.Open = true
	if len(p.Banners()) != 0 {
		t.Error("a banner over the open panel")
	}
	p.Open = false
	p.Apply(event.BisectProgress{ID: tuitest.BisectID, Phase: "checking out"}, tuitest.T0)
	want := "ETA unknown"
	if n := p.State().LaunchesLeft(); n > 0 {
		want = "ETA ~" + style.ShortDur((time.Duration(n) * p.MeanLaunch()).Round(time.Second))
	}
	if b := p.Banners(); len(b) != 1 || !strings.HasSuffix(b[0].Short, want) {
		t.Errorf("without the driver's ETA: %+v, want %q", b, want)
	}
	p.Apply(tuitest.BisectEnd(event.BisectCulprit), tuitest.T0)
	if len(p.Banners()) != 0 {
		t.Error("a banner after the end")
	}
}
