package sessions

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/compare"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// measured waits until the open experiment is exp with at least n steady
// samples and its fingerprint.
func (r *repeatRig) measured(t *testing.T, exp string, n int) {
	t.Helper()
	r.rec.waitFor(t, exp+" measured", 90*time.Second, func([]event.Event) bool {
		res, open := r.lab.provisionalOf(exp)
		cur, _ := r.lab.Current()
		return open && res.N >= n && cur.Fingerprint != nil
	})
}

// relaunch launches the last request again, with profile when not "".
func (r *repeatRig) relaunch(t *testing.T, ctx context.Context, profile string) {
	t.Helper()
	req := r.ctl.Request()
	if profile != "" {
		req.Profile = profile
	}
	plan, err := r.ctl.Plan(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.Launch(ctx, plan); err != nil {
		t.Fatal(err)
	}
}

// TestCompareExperimentsRecordedOnSimHost is the diff test against
// the simulated host: three launches — untuned at the baseline commit, the
// nccl-ll-ring profile at the same commit, the same profile after a
// checkout of the regressing commit. e1 vs e2: only env rows changed, and
// the results (62.5 vs 89 tok/s). e2 vs e3: the commit changed, with the
// range (the regressing commit brought in, pynccl.py among the files it
// touches) recorded at e3's start; no env row changed; tok/s down ×0.92.
func TestCompareExperimentsRecordedOnSimHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rig := newSimRig(t, ctx, simRigOptions{profile: "none", repo: true})
	const n = 4
	rig.measured(t, "e1", n)
	rig.relaunch(t, ctx, "nccl-ll-ring")
	rig.measured(t, "e2", n)
	run(t, rig.h.RepoPath, "git", "checkout", "-q", rig.h.Commits.Regressing)
	rig.relaunch(t, ctx, "")
	rig.measured(t, "e3", n)
	if _, err := rig.lab.End(ctx, ""); err != nil {
		t.Fatal(err)
	}
	xs := rig.lab.Experiments()

	changed := func(d *compare.Diff) (groups []string, names []string) {
		for _, f := range d.Fields {
			if f.Changed {
				if !slices.Contains(groups, f.Group) {
					groups = append(groups, f.Group)
				}
				names = append(names, f.Group+" "+f.Name)
			}
		}
		return groups, names
	}
	logRate := func(d *compare.Diff) compare.ResultRow {
		t.Helper()
		for _, r := range d.Results {
			if r.Metric == compare.MetricLogTokS {
				return r
			}
		}
		t.Fatalf("no %s row in %+v", compare.MetricLogTokS, d.Results)
		return compare.ResultRow{}
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 0.05*want }

	// Only the profile changed.
	d, err := compare.Compare(xs, "e1", "e2")
	if err != nil {
		t.Fatal(err)
	}
	groups, names := changed(d)
	if !slices.Equal(groups, []string{"env"}) || !slices.Contains(names, "env profile") || !slices.Contains(names, "env NCCL_PROTO") {
		t.Errorf("e1 vs e2 changed %q, want env rows only (the profile and its variables)", names)
		for _, f := range d.Fields {
			if f.Changed {
				t.Logf("%s %s: %q → %q", f.Group, f.Name, f.A, f.B)
			}
		}
	}
	if d.Range != nil {
		t.Errorf("e1 vs e2: a commit range %+v at the same HEAD", d.Range)
	}
	r := logRate(d)
	if !near(r.A.Median, sim.ModelTokPerSec(false, false, false)) || !near(r.B.Median, sim.ModelTokPerSec(true, false, false)) {
		t.Errorf("e1 vs e2 tok/s %.1f vs %.1f, want about %.1f vs %.1f", r.A.Median, r.B.Median,
			sim.ModelTokPerSec(false, false, false), sim.ModelTokPerSec(true, false, false))
	}

	// Only HEAD changed.
	d, err = compare.Compare(xs, "e2", "e3")
	if err != nil {
		t.Fatal(err)
	}
	groups, names = changed(d)
	if !slices.Contains(names, "commit HEAD") || slices.Contains(groups, "env") || slices.Contains(groups, "flags") {
		t.Errorf("e2 vs e3 changed %q, want the commit and no env or flag row", names)
	}
	rg := d.Range
	if rg == nil {
		t.Fatalf("e2 vs e3: no commit range (%s)", d.RangeNote)
	}
	if rg.From != rig.h.Commits.Baseline || rg.To != rig.h.Commits.Regressing || rg.Err != "" ||
		!slices.Contains(rg.Ahead, git.ShortID(rig.h.Commits.Regressing)+" Fix PCG MoE Error") || !slices.Contains(rg.Files, sim.PyncclPath) {
		t.Errorf("range %+v", rg)
	}
	if !strings.Contains(d.RangeNote, "e3") {
		t.Errorf("range note %q, want it recorded at e3's start", d.RangeNote)
	}
	r = logRate(d)
	if !near(r.B.Median, sim.ModelTokPerSec(true, true, false)) || r.B.Median >= r.A.Median {
		t.Errorf("e2 vs e3 tok/s %.1f vs %.1f, want about %.1f after the regression", r.A.Median, r.B.Median, sim.ModelTokPerSec(true, true, false))
	}
}
