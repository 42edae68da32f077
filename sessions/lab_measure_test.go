package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/git"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

func TestLabBaseline(t *testing.T) {
	ctx := context.Background()
	rig := newLabRig(&Lab{Preset: "sim"})
	defer rig.lab.Close(ctx)
	lab := rig.lab
	if err := lab.Baseline(ctx, "e1"); err == nil || err.Error() != `no experiment "e1"` {
		t.Errorf("baseline before any experiment: %v", err)
	}
	if _, err := lab.Start(ctx, "tuned", ""); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"tuned", "e2", "E1"} { // a name is not an id
		if err := lab.Baseline(ctx, bad); err == nil {
			t.Errorf("baseline %q accepted", bad)
		}
	}
	if err := lab.Baseline(ctx, " e1 "); err != nil {
		t.Fatal(err)
	}
	if err := lab.Baseline(ctx, ""); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := lab.Baseline(cctx, "e1"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	got := of[event.Baseline](rig.rec.snapshot())
	if want := []event.Baseline{{Exp: "e1"}, {Exp: ""}}; !slices.Equal(got, want) {
		t.Errorf("published %+v, want %+v", got, want)
	}
	lab.Close(ctx)
	if err := lab.Baseline(ctx, "e1"); !errors.Is(err, ErrLabClosed) {
		t.Errorf("after close: %v", err)
	}
}

func TestLabRangeWithoutRepo(t *testing.T) {
	lab := &Lab{Preset: "sim"}
	if _, err := lab.Range(context.Background(), "a", "b"); !errors.Is(err, ErrNoRepo) {
		t.Errorf("%v, want ErrNoRepo", err)
	}
}

// hungHost is a host whose commands never answer: each Run waits for its
// ctx to end.
type hungHost struct {
	remote.Host // nil: only Name and Run are called
	runs        atomic.Int64
}

func (h *hungHost) Name() string { return "hung" }

func (h *hungHost) Run(ctx context.Context, _ string, _ io.Reader) (remote.Result, error) {
	h.runs.Add(1)
	<-ctx.Done()
	return remote.Result{}, ctx.Err()
}

// TestLabRangeGivesUp: against a host that never answers, Range returns
// after RangeTimeout (3× the probe timeout) with an error saying so,
// instead of holding the compare view's range forever; and a second
// Range is not held up behind the first one's open of the checkout.
func TestLabRangeGivesUp(t *testing.T) {
	h := &hungHost{}
	lab := &Lab{Host: h, RepoPath: "/srv/sglang", ProbeTimeout: 20 * time.Millisecond}
	if lab.RangeTimeout() != 60*time.Millisecond {
		t.Fatalf("range timeout %v, want 3 × 20ms", lab.RangeTimeout())
	}
	errc := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := lab.Range(context.Background(), "a6d51c0", "HEAD")
			errc <- err
		}()
	}
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "commits between a6d51c0 and HEAD: timed out after 60ms: context deadline exceeded" {
				t.Errorf("range: %v", err)
			}
		case <-time.After(30 * time.Second): // a watchdog, not a measurement
			t.Fatal("Range did not give up on a host that never answers")
		}
	}
	if n := h.runs.Load(); n != 2 {
		t.Errorf("%d commands run, want both Ranges' opens of the checkout at once", n)
	}
}

// TestRangeSinceRecordsATimeout: when the previous experiment's capture
// (whose HEAD the range starts from) does not finish within the git
// deadline, the range is recorded with an Err saying so rather than left
// out as if there were none; nil still means no previous HEAD.
func TestRangeSinceRecordsATimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	stuck := &captureSlot{done: make(chan struct{})}
	got := rangeSince(ctx, nil, stuck, "b7e2f00", 10*time.Millisecond)
	want := &event.CommitRange{To: "b7e2f00", Err: "timed out reading the range from the previous experiment's HEAD: its capture did not finish within 10ms"}
	if got == nil || !reflect.DeepEqual(*got, *want) {
		t.Errorf("range %+v, want %+v", got, want)
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if got := rangeSince(stopped, nil, stuck, "b7e2f00", time.Second); got == nil || !strings.Contains(got.Err, "stopped") {
		t.Errorf("stopped: %+v", got)
	}
	finished := &captureSlot{done: make(chan struct{})} // head "": it knew none
	close(finished.done)
	if got := rangeSince(context.Background(), nil, finished, "b7e2f00", time.Second); got != nil {
		t.Errorf("no previous HEAD: %+v", got)
	}
	if got := rangeSince(ctx, nil, nil, "b7e2f00", time.Second); got != nil {
		t.Errorf("first experiment: %+v", got)
	}
}

// TestLabTagsRepeatLaunches: a repeat tags the open experiment as launch
// 1 of N (renamed, being the Lab's name) and the next launches as 2/N, 3/N
// right after their exp-start; a launch not armed is not tagged, and a
// name given by hand is kept.
func TestLabTagsRepeatLaunches(t *testing.T) {
	ctx := context.Background()
	rig := newLabRig(&Lab{Preset: "sim"})
	defer rig.lab.Close(ctx)
	lab := rig.lab
	rig.publish(event.Event{At: time.Now(), Data: event.RepoHead{Commit: "a6d51c0f00d", Short: "a6d51c0"}})
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")})
	series, _, err := lab.beginRepeat(ctx, 3)
	if err != nil || series != "e1" {
		t.Fatalf("begin: %q %v", series, err)
	}
	for i := 2; i <= 3; i++ {
		lab.armRepeat(series, i, 3)
		rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")})
	}
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")}) // not armed
	lab.armRepeat(series, 9, 9)
	lab.disarmRepeat()
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")}) // disarmed
	count[event.ExperimentStart](t, rig.rec, "5 starts", 5)
	var seq []string
	for _, e := range rig.rec.snapshot() {
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			seq = append(seq, "start "+p.ID+" "+p.Name)
		case event.Repeat:
			seq = append(seq, "repeat "+p.Exp+" of "+p.Series+" "+repeatTag(p.I, p.N))
		case event.ExperimentUpdate:
			seq = append(seq, "name "+p.Exp+" "+p.Name)
		}
	}
	want := []string{
		"start e1 nccl-ll-ring @ a6d51c0",
		"repeat e1 of e1  #1/3", "name e1 nccl-ll-ring @ a6d51c0 #1/3",
		"start e2 nccl-ll-ring @ a6d51c0 #2/3", "repeat e2 of e1  #2/3",
		"start e3 nccl-ll-ring @ a6d51c0 #3/3", "repeat e3 of e1  #3/3",
		"start e4 nccl-ll-ring @ a6d51c0",
		"start e5 nccl-ll-ring @ a6d51c0",
	}
	if !slices.Equal(seq, want) {
		t.Errorf("published\n%q\nwant\n%q", seq, want)
	}
	if id := lab.repeatExp("e1", 3); id != "e3" {
		t.Errorf("launch 3 of e1 is %q", id)
	}
	// Named by hand: the repeat keeps the name.
	if err := lab.Update(ctx, event.ExperimentUpdate{Name: "mine"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lab.beginRepeat(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if cur, _ := lab.Current(); cur.Name != "mine" {
		t.Errorf("renamed a hand-named experiment: %q", cur.Name)
	}
	if _, err := lab.End(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lab.beginRepeat(ctx, 2); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("begin with none open: %v", err)
	}
}

// TestLabAbandonsARepeatOfOneLaunch: a repeat that ends before its second
// launch gives the series its name back and corrects its tag to launch 1
// of 1 (or the tag it had before, a launch of an earlier repeat); once a
// second launch is tagged, nothing is taken back; a hand-given name is
// left alone.
func TestLabAbandonsARepeatOfOneLaunch(t *testing.T) {
	ctx := context.Background()
	rig := newLabRig(&Lab{Preset: "sim"})
	defer rig.lab.Close(ctx)
	lab := rig.lab
	rig.publish(event.Event{At: time.Now(), Data: event.RepoHead{Commit: "a6d51c0f00d", Short: "a6d51c0"}})
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")})
	series, undo, err := lab.beginRepeat(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.abandonRepeat(ctx, undo); err != nil {
		t.Fatal(err)
	}
	if cur, _ := lab.Current(); cur.Name != "nccl-ll-ring @ a6d51c0" || cur.Repeat == nil || *cur.Repeat != (event.Repeat{Exp: "e1", Series: "e1", I: 1, N: 1}) {
		t.Errorf("after the abandon: %q tagged %+v; want the old name, launch 1 of 1", cur.Name, cur.Repeat)
	}
	// A repeat that got its second launch keeps its tags.
	_, undo, _ = lab.beginRepeat(ctx, 3)
	lab.armRepeat(series, 2, 3)
	rig.publish(event.Event{At: time.Now(), Data: launched("nccl-ll-ring")})
	count[event.ExperimentStart](t, rig.rec, "2 starts", 2)
	if err := lab.abandonRepeat(ctx, undo); err != nil {
		t.Fatal(err)
	}
	xs := lab.Experiments()
	if xs[0].Name != "nccl-ll-ring @ a6d51c0 #1/3" || xs[0].Repeat.N != 3 {
		t.Errorf("series after a second launch: %q %+v", xs[0].Name, xs[0].Repeat)
	}
	// e2 (launch 2 of 3) begins a repeat of its own and abandons it: it
	// is launch 2 of e1's repeat again, named so.
	_, undo, _ = lab.beginRepeat(ctx, 4)
	if cur, _ := lab.Current(); cur.Name != "nccl-ll-ring @ a6d51c0 #1/4" {
		t.Errorf("e2 as a series: %q", cur.Name)
	}
	if err := lab.abandonRepeat(ctx, undo); err != nil {
		t.Fatal(err)
	}
	if cur, _ := lab.Current(); cur.Name != "nccl-ll-ring @ a6d51c0 #2/3" || *cur.Repeat != (event.Repeat{Exp: "e2", Series: "e1", I: 2, N: 3}) {
		t.Errorf("e2 after its abandoned repeat: %q %+v", cur.Name, cur.Repeat)
	}
	// Renamed by hand during the repeat: the name stays.
	_, undo, _ = lab.beginRepeat(ctx, 2)
	if err := lab.Update(ctx, event.ExperimentUpdate{Name: "mine"}); err != nil {
		t.Fatal(err)
	}
	if err := lab.abandonRepeat(ctx, undo); err != nil {
		t.Fatal(err)
	}
	if cur, _ := lab.Current(); cur.Name != "mine" {
		t.Errorf("a hand-given name was changed: %q", cur.Name)
	}
}

// TestLabRecordsTheCommitRange: on the simulated host, an experiment at
// the baseline commit, then a checkout of the regressing commit and a
// second experiment: its fingerprint records the range from the first's
// HEAD (the commit brought in, the files it touches); a third experiment
// at the same HEAD records none. Lab.Range reads the same live, and says
// which commit it does not know.
func TestLabRecordsTheCommitRange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, host := simHost(t, ctx)
	rig := newLabRig(&Lab{Host: host, RepoPath: h.RepoPath, Config: config.Builtins(), Preset: "sim", ProbeTimeout: 5 * time.Second})
	defer rig.lab.Close(ctx)
	lab := rig.lab
	// GPU samples keep coming, as they do in the cockpit: no capture
	// waits for one.
	gctx, stopGPUs := context.WithCancel(ctx)
	defer stopGPUs()
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-gctx.Done():
				return
			case <-tick.C:
				rig.publish(event.Event{At: time.Now(), Data: event.GPUSample{At: time.Now(), GPUs: []event.GPU{{Index: 0}}}})
			}
		}
	}()
	if _, err := lab.Start(ctx, "before", ""); err != nil {
		t.Fatal(err)
	}
	count[event.ExperimentFingerprint](t, rig.rec, "the first fingerprint", 1)
	run(t, h.RepoPath, "git", "checkout", "-q", h.Commits.Regressing)
	if _, err := lab.Start(ctx, "after", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := lab.Start(ctx, "again", ""); err != nil { // before the second's capture ends: it waits for it
		t.Fatal(err)
	}
	fps := count[event.ExperimentFingerprint](t, rig.rec, "three fingerprints", 3)
	byExp := map[string]event.Fingerprint{}
	for _, fp := range fps {
		byExp[fp.Exp] = fp.Fingerprint
	}
	if g := byExp["e1"].Git; g == nil || g.Head != h.Commits.Baseline || g.Range != nil {
		t.Errorf("first: %+v", g)
	}
	if g := byExp["e3"].Git; g == nil || g.Head != h.Commits.Regressing || g.Range != nil {
		t.Errorf("third (same HEAD): %+v", g)
	}
	g := byExp["e2"].Git
	if g == nil || g.Range == nil {
		t.Fatalf("second: no range: %+v (errors %q)", g, byExp["e2"].Errors)
	}
	ahead := strings.Split(strings.TrimSpace(run(t, h.RepoPath, "git", "log", "--oneline", "--no-decorate", h.Commits.Baseline+".."+h.Commits.Regressing)), "\n")
	checkRange := func(what string, rg *event.CommitRange) {
		t.Helper()
		if rg.From != h.Commits.Baseline || rg.To != h.Commits.Regressing || rg.Err != "" {
			t.Errorf("%s: from %s to %s (%s)", what, rg.From, rg.To, rg.Err)
		}
		if len(rg.Ahead) == 0 || rg.Ahead[0] != git.ShortID(h.Commits.Regressing)+" Fix PCG MoE Error" || !slices.Equal(rg.Ahead, ahead) ||
			rg.AheadTotal != len(ahead) || len(rg.Behind) != 0 || rg.BehindTotal != 0 {
			t.Errorf("%s: ahead %q (%d) behind %q (%d)", what, rg.Ahead, rg.AheadTotal, rg.Behind, rg.BehindTotal)
		}
		if !slices.Contains(rg.Files, sim.PyncclPath) || rg.FilesTotal != len(rg.Files) {
			t.Errorf("%s: files %q (%d), want %s among them", what, rg.Files, rg.FilesTotal, sim.PyncclPath)
		}
	}
	checkRange("recorded", g.Range)
	live, err := lab.Range(ctx, h.Commits.Baseline, git.ShortID(h.Commits.Regressing))
	if err != nil {
		t.Fatal(err)
	}
	checkRange("live", live)
	unknown := strings.Repeat("0", 40)
	if _, err := lab.Range(ctx, unknown, h.Commits.Regressing); err == nil || !strings.Contains(err.Error(), "unknown commit "+unknown) {
		t.Errorf("unknown commit: %v", err)
	}
	// A previous HEAD the checkout does not know (a pruned commit): the
	// range is recorded with why it could not be read.
	r, err := lab.openRepo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prev := &captureSlot{done: make(chan struct{}), head: unknown}
	close(prev.done)
	rg := rangeSince(ctx, r, prev, h.Commits.Regressing, time.Second)
	if rg == nil || rg.From != unknown || rg.To != h.Commits.Regressing || !strings.Contains(rg.Err, "unknown commit") || len(rg.Ahead) != 0 {
		t.Errorf("range from an unknown commit: %+v", rg)
	}
}

// TestLabEndGPUsAreTheLoadedOnes: an experiment's end records its GPUs
// under load: the last sample of the experiment in which a GPU was busy;
// when none was (no utilization reading), for an end by a kill (or a
// relaunch's kill), the last sample before the kill began, not the idle
// ones sampled while the server stopped; a failed kill forgets it.
func TestLabEndGPUsAreTheLoadedOnes(t *testing.T) {
	loaded := []event.GPU{{Index: 0}} // told apart by their index
	idle := []event.GPU{{Index: 7, UtilGPUPct: event.Reading{Value: 0, Status: event.CellOK}}}
	busyGPUs := []event.GPU{{Index: 3, UtilGPUPct: event.Reading{Value: 97, Status: event.CellOK}}}
	for _, tc := range []struct {
		name  string
		steps []event.Payload
		want  int // the end's GPU index
	}{
		{"relaunch", []event.Payload{
			event.GPUSample{GPUs: loaded}, event.KillStep{Step: "signalling", Relaunch: true}, event.GPUSample{GPUs: idle},
			event.KillStep{Step: "done", Relaunch: true}, launched("nccl-ll-ring"),
		}, 0},
		{"kill", []event.Payload{
			event.GPUSample{GPUs: loaded}, event.KillStep{Step: "signalling"}, event.GPUSample{GPUs: idle},
			event.KillStep{Step: "waiting-gpu"}, event.GPUSample{GPUs: idle}, status(event.PhaseKilled, 9),
		}, 0},
		{"busy, then idle, ended by exit", []event.Payload{
			event.GPUSample{GPUs: busyGPUs}, event.GPUSample{GPUs: idle}, status(event.PhaseExited, 9),
		}, 3},
		{"busy before the experiment only", []event.Payload{
			event.GPUSample{GPUs: idle}, status(event.PhaseExited, 9),
		}, 7},
		{"failed kill, then exit", []event.Payload{
			event.GPUSample{GPUs: loaded}, event.KillStep{Step: "signalling"}, event.KillStep{Step: "failed"},
			event.GPUSample{GPUs: idle}, status(event.PhaseExited, 9),
		}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rig := newLabRig(&Lab{Preset: "sim"})
			defer rig.lab.Close(context.Background())
			rig.publish(event.Event{At: at(0), Data: event.GPUSample{At: at(0), GPUs: busyGPUs}}) // before the experiment
			rig.publish(event.Event{At: at(0), Data: status(event.PhaseNone, 0)})
			rig.publish(event.Event{At: at(1), Data: launched("none")})
			rig.publish(event.Event{At: at(1), Data: status(event.PhaseReady, 1)})
			for i, p := range tc.steps {
				if s, ok := p.(event.GPUSample); ok {
					s.At = at(2 + float64(i))
					p = s
				}
				rig.publish(event.Event{At: at(2 + float64(i)), Data: p})
			}
			end := count[event.ExperimentEnd](t, rig.rec, "the end", 1)[0]
			if len(end.GPUs) != 1 || end.GPUs[0].Index != tc.want {
				t.Errorf("end GPUs %+v, want index %d", end.GPUs, tc.want)
			}
		})
	}
}

// A GPU whose handle fails (event.GPUSample.Missing) stays in the
// experiment's GPUs, lost, under the name and bus id an earlier sample
// gave it (and with none when no sample ever did), in the fingerprint
// and at the end; the session's GPU count (the default TP) counts it.
func TestLabKeepsAGPUWhoseHandleFails(t *testing.T) {
	gpu := func(i int) event.GPU {
		g := event.AbsentGPU(i)
		g.Name, g.BusID = event.Text{S: "NVIDIA H200", Status: event.CellOK}, event.Text{S: fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10), Status: event.CellOK}
		g.UtilGPUPct = event.Reading{Value: 97, Status: event.CellOK}
		return g
	}
	rig := newLabRig(&Lab{Preset: "sim", Host: refusingHost{}})
	defer rig.lab.Close(context.Background())
	rig.publish(event.Event{At: at(0), Data: event.GPUSample{At: at(0), GPUs: []event.GPU{gpu(0), gpu(1), gpu(2)}}})
	rig.publish(event.Event{At: at(0), Data: status(event.PhaseNone, 0)})
	rig.publish(event.Event{At: at(1), Data: launched("none")})
	handleLost := event.GPUSample{At: at(2), GPUs: []event.GPU{gpu(0), gpu(1)}, Missing: []int{2, 3}}
	rig.publish(event.Event{At: at(2), Data: handleLost})
	check := func(what string, gs []event.GPU) {
		t.Helper()
		if len(gs) != 4 {
			t.Fatalf("%s: %d GPUs, want 4 (2 and 3 lost): %+v", what, len(gs), gs)
		}
		if g := gs[2]; g.Index != 2 || !g.Lost || g.Name.S != "NVIDIA H200" || g.BusID.S != "00000000:38:00.0" {
			t.Errorf("%s: GPU 2 %+v, want lost with its name and bus id", what, g)
		}
		if g := gs[3]; g.Index != 3 || !g.Lost || g.Name.Status != event.CellAbsent {
			t.Errorf("%s: GPU 3 %+v, want lost, unnamed", what, g)
		}
	}
	fp := count[event.ExperimentFingerprint](t, rig.rec, "the fingerprint", 1)[0]
	check("fingerprint", fp.Fingerprint.GPUs)
	rig.publish(event.Event{At: at(3), Data: status(event.PhaseExited, 3)})
	check("end", count[event.ExperimentEnd](t, rig.rec, "the end", 1)[0].GPUs)

	s, err := Open(Options{Name: "box", Journal: JournalOptions{Off: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background(), nil)
	s.Publish(event.Event{At: at(2), Data: handleLost})
	if n := s.GPUCount(); n != 4 {
		t.Errorf("GPUCount %d, want 4", n)
	}
}

// refusingHost is a host whose commands fail at once: a fingerprint of it
// holds only what the Lab observed (the GPUs).
type refusingHost struct {
	remote.Host // nil: only Name and Run are called
}

func (refusingHost) Name() string { return "refusing" }

func (refusingHost) Run(context.Context, string, io.Reader) (remote.Result, error) {
	return remote.Result{}, errors.New("refused")
}
