package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/bisect"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
)

// scriptDecider is a decision procedure that asks for its steps in order,
// one per launch recorded, then ends with its outcome.
type scriptDecider struct {
	steps []string // commit ids
	end   bisect.Outcome
	n     int
}

func (d *scriptDecider) Next() bisect.Step {
	if d.n < len(d.steps) {
		return bisect.Step{Commit: d.steps[d.n]}
	}
	return bisect.Step{Done: true, Outcome: d.end}
}
func (d *scriptDecider) Record(string, float64) error       { d.n++; return nil }
func (d *scriptDecider) RecordFailure(string, string) error { d.n++; return nil }
func (d *scriptDecider) LaunchesLeft() int                  { return len(d.steps) - d.n }

// scripted folds records into a scriptDecider of steps (each picked from
// the range by index, -1 a commit that does not exist), ending with a
// culprit at index culprit.
func scripted(steps []int, culprit int) func(event.BisectStart, []event.BisectLaunch) (bisectDecider, error) {
	return func(s event.BisectStart, ls []event.BisectLaunch) (bisectDecider, error) {
		d := &scriptDecider{end: bisect.Outcome{Kind: event.BisectCulprit, Culprit: s.Commits[culprit].ID, Why: "scripted"}}
		for _, i := range steps {
			id := strings.Repeat("d", 40)
			if i >= 0 {
				id = s.Commits[i].ID
			}
			d.steps = append(d.steps, id)
		}
		d.n = len(ls)
		return d, nil
	}
}

// bisectRig is a simulated host with a running server, its checkout made
// four commits long past its base and dirty (a tracked file changed, an
// untracked one), and a bisecter on it.
type bisectRig struct {
	*repeatRig
	b       *bisecter
	commits []string // base, then the four new commits
	head    string
}

func newBisectRig(t *testing.T, ctx context.Context) *bisectRig {
	rig := newSimRig(t, ctx, simRigOptions{profile: "nccl-ll-ring", repo: true})
	dir := rig.h.RepoPath
	br := &bisectRig{repeatRig: rig}
	br.commits = append(br.commits, strings.TrimSpace(run(t, dir, "git", "rev-parse", "HEAD")))
	for i := range 4 {
		name := filepath.Join(dir, "bisect-step.txt")
		if err := os.WriteFile(name, []byte(strings.Repeat("step\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, "git", "add", "bisect-step.txt")
		run(t, dir, "git", "commit", "-q", "-m", "step "+string(rune('1'+i)))
		br.commits = append(br.commits, strings.TrimSpace(run(t, dir, "git", "rev-parse", "HEAD")))
	}
	br.head = br.commits[4]
	if err := os.WriteFile(filepath.Join(dir, "bisect-step.txt"), []byte("my dirty work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes-untracked.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &Git{Host: rig.host, Path: dir, Publish: rig.publish}
	br.b = &bisecter{Control: rig.ctl, Lab: rig.lab, Git: g, Publish: rig.publish}
	return br
}

// checkRestored: HEAD, the branch and the dirty work are as before the
// bisect, and its stash is gone.
func (br *bisectRig) checkRestored(t *testing.T) {
	t.Helper()
	dir := br.h.RepoPath
	if h := strings.TrimSpace(run(t, dir, "git", "rev-parse", "HEAD")); h != br.head {
		t.Errorf("HEAD %s, want %s", h, br.head)
	}
	if b := strings.TrimSpace(run(t, dir, "git", "branch", "--show-current")); b == "" {
		t.Error("HEAD left detached, want the branch")
	}
	for name, want := range map[string]string{"bisect-step.txt": "my dirty work\n", "notes-untracked.txt": "notes\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v; want %q", name, b, err, want)
		}
	}
	if s := run(t, dir, "git", "stash", "list"); strings.Contains(s, "flightdeck bisect") {
		t.Errorf("the bisect's stash is left: %q", s)
	}
}

func bisectCfg() BisectConfig {
	return BisectConfig{Good: "HEAD~4", Bad: "HEAD", MinSamples: 3, MaxWait: time.Minute}
}

// TestBisectDriverLaunchesInOrderAndRestores: the driver journals the
// range, checks out and launches each commit the decision asks for in
// order (a commit that cannot be checked out is a "checkout" failure, not
// an error), names each experiment after the bisect, ends with the
// decision's outcome and restores the branch and the dirty work.
func TestBisectDriverLaunchesInOrderAndRestores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	br := newBisectRig(t, ctx)
	br.b.decide = scripted([]int{0, 4, -1, 2}, 3)
	o, err := br.b.Run(ctx, bisectCfg())
	if err != nil || o.Kind != event.BisectCulprit || o.Culprit != br.commits[3] {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	es := br.rec.snapshot()
	starts := of[event.BisectStart](es)
	if len(starts) != 1 || starts[0].ID != "b1" || len(starts[0].Commits) != 5 || !starts[0].Origin.Dirty || starts[0].Origin.Snapshot == "" {
		t.Fatalf("bisect-start %+v", starts)
	}
	for i, c := range starts[0].Commits {
		if c.ID != br.commits[i] {
			t.Errorf("range[%d] %s, want %s", i, c.ID, br.commits[i])
		}
	}
	if c := starts[0].Commits[2]; c.Subject != "step 2" || c.FilesTotal != 1 || c.Files[0] != "bisect-step.txt" {
		t.Errorf("range[2] %+v", c)
	}
	ls := of[event.BisectLaunch](es)
	want := []string{br.commits[0], br.commits[4], strings.Repeat("d", 40), br.commits[2]}
	if len(ls) != len(want) {
		t.Fatalf("%d launches, want %d: %+v", len(ls), len(want), ls)
	}
	names := map[string]string{}
	for _, u := range of[event.ExperimentUpdate](es) {
		names[u.Exp] = u.Name
	}
	for i, l := range ls {
		if l.Commit != want[i] {
			t.Errorf("launch %d at %s, want %s", i, l.Commit, want[i])
		}
		if i == 2 {
			if l.Failed != "checkout" || l.Value != 0 {
				t.Errorf("launch at a missing commit: %+v, want a checkout failure", l)
			}
			continue
		}
		if l.Failed != "" || !(l.Value > 0) || l.Exp == "" || l.Took <= 0 {
			t.Errorf("launch %d: %+v", i, l)
		}
		if wantName := "bisect b1 " + l.Commit[:7] + " #1"; names[l.Exp] != wantName {
			t.Errorf("experiment %s named %q, want %q", l.Exp, names[l.Exp], wantName)
		}
	}
	ends := of[event.BisectEnd](es)
	if len(ends) != 1 || ends[0].Outcome != event.BisectCulprit || !strings.Contains(ends[0].Restored, "dirty work restored") {
		t.Errorf("bisect-end %+v", ends)
	}
	if ps := of[event.BisectProgress](es); len(ps) == 0 || ps[len(ps)-1].Phase != BisectRestoring {
		t.Errorf("progress %+v", ps)
	}
	br.checkRestored(t)
}

// TestBisectDriverCancelRestoresAndResumeContinues: cancelled after its
// first launch, the bisect restores the checkout and journals cancelled;
// a new session whose journal holds the records without any end (a
// killed process) resumes the last bisect, launches the steps left and,
// with Stay, leaves the culprit checked out.
func TestBisectDriverCancelRestoresAndResumeContinues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	br := newBisectRig(t, ctx)
	br.b.decide = scripted([]int{0, 4, 2}, 3)
	bctx, stop := context.WithCancel(ctx)
	go func() {
		br.rec.waitFor(t, "the first launch", 2*time.Minute, func(es []event.Event) bool { return len(of[event.BisectLaunch](es)) > 0 })
		stop()
	}()
	o, err := br.b.Run(bctx, bisectCfg())
	if !errors.Is(err, context.Canceled) || o.Kind != event.BisectCancelled {
		t.Fatalf("cancelled bisect: %+v, %v", o, err)
	}
	es := br.rec.snapshot()
	if ends := of[event.BisectEnd](es); len(ends) != 1 || ends[0].Outcome != event.BisectCancelled {
		t.Fatalf("bisect-end %+v", ends)
	}
	// It says how far it got: the launches journaled, not the one cut short.
	if n, why := len(of[event.BisectLaunch](es)), o.Why; n == 0 || why != map[bool]string{true: "after 1 launch", false: fmt.Sprintf("after %d launches", n)}[n == 1] {
		t.Errorf("cancelled after %d launches: why %q", n, why)
	}
	br.checkRestored(t)

	// The journal of a killed run: start and launches, no end.
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w, err := journal.Create(path, event.SessionHeader{Host: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, e := range es {
		switch e.Data.(type) {
		case event.BisectStart, event.BisectLaunch:
			n++
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first := len(of[event.BisectLaunch](es))
	b2 := &bisecter{Control: br.ctl, Lab: br.lab, Git: br.b.Git, Publish: br.publish, Journal: path, Opened: time.Now(), decide: scripted([]int{0, 4, 2}, 3)}
	cfg := bisectCfg()
	cfg.Good, cfg.Bad = "", "" // the bisect-start's
	cfg.Resume, cfg.Stay = ResumeLast, true
	o, err = b2.Run(ctx, cfg)
	if err != nil || o.Kind != event.BisectCulprit {
		t.Fatalf("resumed: %+v, %v", o, err)
	}
	ls := of[event.BisectLaunch](br.rec.snapshot())
	want := []string{br.commits[0], br.commits[4], br.commits[2]}
	if len(ls) != len(want) {
		t.Fatalf("%d launches in all (%d before the cancel), want %d", len(ls), first, len(want))
	}
	for i, l := range ls {
		if l.Commit != want[i] || l.ID != "b1" {
			t.Errorf("launch %d: %s of %s, want %s of b1", i, l.Commit, l.ID, want[i])
		}
	}
	if starts := of[event.BisectStart](br.rec.snapshot()); len(starts) != 1 {
		t.Errorf("%d bisect-starts: a resume from the own journal journals none", len(starts))
	}
	dir := br.h.RepoPath
	if h := strings.TrimSpace(run(t, dir, "git", "rev-parse", "HEAD")); h != br.commits[3] {
		t.Errorf("stay: HEAD %s, want the culprit %s", h, br.commits[3])
	}
	if _, err := b2.Run(ctx, cfg); !errors.Is(err, ErrNoBisectToResume) {
		t.Errorf("a second resume: %v, want ErrNoBisectToResume", err)
	}
}

// TestBisectDriverClassifiesServerFailures: a commit of the simulated
// history whose code does not import is a launch failed with the
// server's class (import-error), and the bisect goes on to the next step.
func TestBisectDriverClassifiesServerFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	rig := newSimRig(t, ctx, simRigOptions{profile: "nccl-ll-ring", repo: true})
	if len(rig.h.Commits.Broken) == 0 {
		t.Fatal("the simulated history has no broken commit")
	}
	g := &Git{Host: rig.host, Path: rig.h.RepoPath, Publish: rig.publish}
	b := &bisecter{Control: rig.ctl, Lab: rig.lab, Git: g, Publish: rig.publish}
	broken := rig.h.Commits.Broken[0]
	b.decide = func(s event.BisectStart, ls []event.BisectLaunch) (bisectDecider, error) {
		d := &scriptDecider{steps: []string{broken, s.Commits[0].ID}, end: bisect.Outcome{Kind: event.BisectFailed, Why: "scripted"}}
		d.n = len(ls)
		return d, nil
	}
	cfg := bisectCfg()
	cfg.Good, cfg.Bad = rig.h.Commits.Baseline, "origin/main"
	o, err := b.Run(ctx, cfg)
	if err != nil || o.Kind != event.BisectFailed {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	ls := of[event.BisectLaunch](rig.rec.snapshot())
	if len(ls) != 2 || ls[0].Commit != broken || ls[0].Failed != "import-error" || ls[0].Why == "" || ls[1].Failed != "" || !(ls[1].Value > 0) {
		t.Fatalf("launches %+v, want the broken commit failed (import-error), then the good one measured", ls)
	}
	if h := strings.TrimSpace(run(t, rig.h.RepoPath, "git", "rev-parse", "HEAD")); h != rig.h.Commits.Baseline {
		t.Errorf("HEAD %s, want the baseline back", h)
	}
}

// TestBisectRefusesBusyGit: a merge or rebase in progress, unmerged paths,
// or an earlier bisect's dirty work still in its stash (a bisect taken
// over midway, on a branch or detached) refuse a bisect; a clean or dirty
// tree does not.
func TestBisectRefusesBusyGit(t *testing.T) {
	head := event.Commit{ID: "2f2d7e1" + strings.Repeat("0", 33)}
	aside := []event.Stash{{Index: 0, Message: "On main: before checkout"}, {Index: 1, Message: "On main: flightdeck bisect b1"}}
	for _, tt := range []struct {
		name string
		st   event.GitStatus
		want string
	}{
		{"clean", event.GitStatus{}, ""},
		{"dirty", event.GitStatus{Files: []event.GitFile{{X: ' ', Y: 'M', Path: "a.py"}}}, ""},
		{"rebase", event.GitStatus{Operation: "rebase"}, "rebase is in progress"},
		{"unmerged", event.GitStatus{Files: []event.GitFile{{X: 'U', Y: 'U', Path: "a.py"}}}, "a.py is unmerged"},
		{"detached, other stashes", event.GitStatus{Head: head, Stashes: []event.Stash{{Message: "On main: before checkout"}}}, ""},
		{"on a branch with a bisect's stash", event.GitStatus{Head: head, Branch: "main", Stashes: aside},
			"bisect b1's dirty work is still in stash@{1} (HEAD at 2f2d7e1): resume that bisect"},
		{"detached with a bisect's stash", event.GitStatus{Head: head, Stashes: aside}, "or put the work back (git stash pop stash@{1}) first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkIdle(tt.st)
			if err == nil {
				err = checkNotMidBisect(tt.st)
			}
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkIdle: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestBisectDriverBenchMetric: with a benchmark metric (ttft) each launch
// is benchmarked once the server is ready and its value is the
// benchmark's median TTFT; the bisect-start says lower is better.
func TestBisectDriverBenchMetric(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	br := newBisectRig(t, ctx)
	br.b.Bencher = &Bencher{Dialer: br.host.(remote.Dialer), Port: func() int { return br.h.ServerPort }, Publish: br.publish,
		Experiment: br.lab.currentID}
	br.b.decide = scripted([]int{4}, 3)
	cfg := bisectCfg()
	cfg.Metric, cfg.Bench = "ttft", &event.BenchConfig{Requests: 2, OutputLen: 8, InputLen: 8}
	if _, err := br.b.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	es := br.rec.snapshot()
	st := of[event.BisectStart](es)
	ls := of[event.BisectLaunch](es)
	dones := of[event.BenchDone](es)
	if len(st) != 1 || st[0].Metric != MetricTTFT || !st[0].Lower || st[0].Bench == nil || st[0].Bench.Requests != 2 {
		t.Fatalf("bisect-start %+v", st)
	}
	if len(ls) != 1 || ls[0].Failed != "" || len(dones) != 1 || dones[0].Result == nil || ls[0].Value != dones[0].Result.TTFT.Median {
		t.Fatalf("launches %+v, benchmarks %+v: want one, valued at the run's median TTFT", ls, dones)
	}
	br.checkRestored(t)
}

// TestBisectUndoHint: a restore that failed says where the checkout was
// and the command that puts it back.
func TestBisectUndoHint(t *testing.T) {
	id := "a6d51c0" + strings.Repeat("0", 33)
	for _, c := range []struct {
		o    event.BisectOrigin
		want string
	}{
		{event.BisectOrigin{Head: id, Branch: "main", Snapshot: "20261202-1"}, `it was main at a6d51c0, the dirty work is in snapshot 20261202-1 (stash "flightdeck bisect b1"): flightdeck git restore HOST 20261202-1 puts both back`},
		{event.BisectOrigin{Head: id, Branch: "main"}, "it was main at a6d51c0: flightdeck git checkout HOST main goes back"},
		{event.BisectOrigin{Head: id}, "it was a6d51c0: flightdeck git checkout HOST " + id + " goes back"},
	} {
		if got := undoHint(c.o, "b1"); got != c.want {
			t.Errorf("undoHint(%+v):\n got %s\nwant %s", c.o, got, c.want)
		}
	}
}
