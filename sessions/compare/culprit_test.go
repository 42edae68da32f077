package compare

import (
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger"
	"github.com/flightdeck-dev/flightdeck/sessions/ledger/ledgertest"
)

// The demo's range: the good commit a6d51c0, three commits pulled on top
// of it, HEAD the CI change that is not the cause.
var culpritRange = []string{
	"e7b9c70 [CI] Raise the nightly benchmark timeout",
	"9f8e7d6 Tune the decode batch",
	"1b2c3d4 Rework pynccl all-reduce",
	"5a5a5a5 Docs: NCCL profiles",
}

const (
	headPulled = "e7b9c70aabbccddeeff00112233445566778899"
	head9f     = "9f8e7d6aabbccddeeff00112233445566778899"
	head1b     = "1b2c3d4aabbccddeeff00112233445566778899"
	head5a     = "5a5a5a5aabbccddeeff00112233445566778899"
)

// culpritExps is A at a6d51c0 (89.4) and B at the pulled HEAD (82.1), a
// repeat of A's configuration for the A/A noise, the range recorded at
// B's start, and launches at the given commits inside it.
func culpritExps(inside map[string]float64) []ledger.Experiment {
	tmpl := ledgertest.Experiment("t", "baseline", ledgertest.HeadA, 89)
	t0 := ledgertest.T0
	exps := []ledger.Experiment{
		launchAt(&tmpl, "r1", headC, 89.2, t0), launchAt(&tmpl, "r2", headC, 89.5, t0.Add(time.Minute)), launchAt(&tmpl, "r3", headC, 89.3, t0.Add(2*time.Minute)),
		launchAt(&tmpl, "e1", ledgertest.HeadA, 89.4, t0.Add(time.Hour)),
	}
	i := 0
	for _, h := range []string{head5a, head1b, head9f} {
		if v, ok := inside[h]; ok {
			i++
			exps = append(exps, launchAt(&tmpl, "m"+h[:2], h, v, t0.Add(time.Hour+time.Duration(i)*time.Minute)))
		}
	}
	b := launchAt(&tmpl, "e2", headPulled, 82.1, t0.Add(2*time.Hour))
	g := *b.Fingerprint.Git
	g.Range = &event.CommitRange{From: ledgertest.HeadA, To: headPulled, Ahead: culpritRange, AheadTotal: 4}
	b.Fingerprint.Git = &g
	return append(exps, b)
}

// TestCulprit: the culprit line names the commits by what the range's
// measurements say, never the pulled HEAD's subject as the cause.
func TestCulprit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inside map[string]float64
		want   string
	}{
		{"nothing measured inside", nil,
			"culprit: one of the 4 commits of the range, none measured inside (newest first): e7b9c70 [CI] Raise the nightly benchmark timeout, 9f8e7d6 Tune the decode batch, 1b2c3d4 Rework pynccl all-reduce, 5a5a5a5 Docs: NCCL profiles"},
		{"a good and a bad commit inside", map[string]float64{head5a: 89.4, head1b: 82.1},
			"culprit between 5a5a5a5 (89.4) and 1b2c3d4 (82.1): 1 commit, 1b2c3d4 itself"},
		{"a good commit inside", map[string]float64{head1b: 89.3},
			"culprit between 1b2c3d4 (89.3) and e7b9c70 (82.1): 2 commits, unmeasured: 9f8e7d6 Tune the decode batch"},
		{"a bad commit inside", map[string]float64{head9f: 82.3},
			"culprit between a6d51c0 (89.4) and 9f8e7d6 (82.3): 3 commits, unmeasured: 1b2c3d4 Rework pynccl all-reduce, 5a5a5a5 Docs: NCCL profiles"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Compare(culpritExps(tc.inside), "e1", "e2")
			if err != nil {
				t.Fatal(err)
			}
			if v := row(t, d, MetricLogTokS).Verdict; v.Word != WordSlower {
				t.Fatalf("verdict %s", v.Text())
			}
			c, ok := d.Culprit()
			if !ok {
				t.Fatal("no culprit")
			}
			if got := c.Text(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestCulpritUndecidedAndCut: without a verdict the line places nothing;
// a range cut at the bottom counts the commits it did not list.
func TestCulpritUndecidedAndCut(t *testing.T) {
	exps := culpritExps(nil)
	exps = exps[3:] // no repeat: no A/A noise, no verdict
	g := *exps[1].Fingerprint.Git
	rg := *g.Range
	rg.Ahead, rg.AheadTotal = rg.Ahead[:2], 9
	g.Range = &rg
	exps[1].Fingerprint.Git = &g
	d, err := Compare(exps, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.Culprit()
	want := "no change to place yet (no verdict between A and B): 9 commits in the range"
	if got := c.Text(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if len(c.Named) != 2 || c.Skipped != 7 {
		t.Errorf("named %q, %d more", c.Named, c.Skipped)
	}
	back, _ := Compare(exps, "e2", "e1")
	if _, ok := back.Culprit(); ok {
		t.Error("a culprit along a range that goes back")
	}
}
