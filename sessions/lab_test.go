package sessions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// labRig is a Lab wired the way the cockpit wires it: everything published
// goes to the recorder (the stream) and then to Observe.
type labRig struct {
	lab *Lab
	rec *recorder
}

func newLabRig(l *Lab) *labRig {
	r := &labRig{lab: l, rec: newRecorder()}
	l.Publish = r.publish
	return r
}

// publish is the stream: record, then let the Lab observe.
func (r *labRig) publish(e event.Event) {
	r.rec.sink(e)
	r.lab.Observe(e)
}

// of returns the recorded payloads of type T, in order.
func of[T event.Payload](es []event.Event) []T {
	var out []T
	for _, e := range es {
		if p, ok := e.Data.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

// count waits until n payloads of type T are recorded and returns them.
func count[T event.Payload](t *testing.T, r *recorder, what string, n int) []T {
	t.Helper()
	r.waitFor(t, what, 30*time.Second, func(es []event.Event) bool { return len(of[T](es)) >= n })
	return of[T](r.snapshot())
}

var labT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return labT0.Add(time.Duration(s * float64(time.Second))) }

func launched(profile string) event.ServerLaunched {
	return event.ServerLaunched{Record: event.LaunchRecord{PID: 4100, Launch: event.LaunchInfo{
		Preset: "sim", Profile: profile, Server: "sglang", LogPath: "/logs/sim-" + profile + ".log",
		Argv: []string{"flightdeck", "sim", "server", "--api-key", "sk-live-123", "--port", "31000"},
		Env:  map[string]string{"NCCL_PROTO": "LL", "HF_TOKEN": "hf_secret"},
	}}}
}

func status(p event.ServerPhase, since float64) event.ServerStatus {
	return event.ServerStatus{Phase: p, Server: "sglang", Preset: "sim", Since: at(since)}
}

func TestLabAutoStartAndEnd(t *testing.T) {
	rig := newLabRig(&Lab{Preset: "sim"})
	lab := rig.lab
	gpus := []event.GPU{{Index: 0}, {Index: 1}}
	steps := []event.Event{
		{At: at(0), Data: event.RepoHead{Commit: "a6d51c0f00d", Short: "a6d51c0"}},
		{At: at(0), Data: status(event.PhaseNone, 0)},
		{At: at(1), Data: launched("none")},
		{At: at(1), Data: status(event.PhaseLaunching, 1)},
		{At: at(60), Data: event.ServerReady{Server: "sglang"}},
		{At: at(61), Data: status(event.PhaseReady, 61)},
	}
	for i := range 10 {
		steps = append(steps, event.Event{At: at(62 + 5*float64(i)), Data: event.TokRate{TokPerSec: 62 + float64(i%3), Ranks: 8}})
	}
	steps = append(steps,
		event.Event{At: at(120), Data: event.GPUSample{At: at(120), GPUs: gpus}},
		event.Event{At: at(130), Data: status(event.PhaseStopping, 130)},
		event.Event{At: at(131), Data: status(event.PhaseKilled, 131)},
		event.Event{At: at(140), Data: launched("nccl-ll-ring")},
		event.Event{At: at(140), Data: status(event.PhaseLaunching, 140)},
		event.Event{At: at(200), Data: status(event.PhaseExited, 200)},
		event.Event{At: at(210), Data: launched("nccl-ll-ring")},
		event.Event{At: at(220), Data: launched("nccl-debug")},
		event.Event{At: at(230), Data: status(event.PhaseLaunching, 220)},
		event.Event{At: at(240), Data: status(event.PhaseFailed, 240)},
		// Already ended: a later exit ends nothing more.
		event.Event{At: at(250), Data: status(event.PhaseExited, 250)},
	)
	for _, e := range steps {
		rig.publish(e)
	}
	ends := count[event.ExperimentEnd](t, rig.rec, "4 exp-ends", 4)
	starts := of[event.ExperimentStart](rig.rec.snapshot())
	if len(starts) != 4 || len(ends) != 4 {
		t.Fatalf("%d starts, %d ends", len(starts), len(ends))
	}
	wantNames := []string{"none @ a6d51c0", "nccl-ll-ring @ a6d51c0", "nccl-ll-ring @ a6d51c0", "nccl-debug @ a6d51c0"}
	for i, s := range starts {
		if s.ID != "e"+string(rune('1'+i)) || s.Name != wantNames[i] || s.Trigger != event.TriggerLaunch || s.Launch == nil {
			t.Errorf("start %d: %+v", i, s)
		}
	}
	wantEnds := []event.Trigger{event.TriggerKill, event.TriggerExit, event.TriggerRelaunch, event.TriggerExit}
	for i, e := range ends {
		if e.Exp != starts[i].ID || e.Trigger != wantEnds[i] {
			t.Errorf("end %d: %s by %q, want %s by %q", i, e.Exp, e.Trigger, starts[i].ID, wantEnds[i])
		}
	}
	// The first run's result: 10 samples from 62 s, the first 3 (and those
	// before 71 s) are warm-up.
	r := ends[0].Result
	if r.N != 7 || r.Dropped != 3 || r.Median != 63 || r.Metric != "tok/s" || len(ends[0].GPUs) != 2 {
		t.Errorf("first result %+v, GPUs %d", r, len(ends[0].GPUs))
	}
	// Secrets never reach the journal.
	l := starts[0].Launch
	if l.Env["HF_TOKEN"] != "<redacted>" || l.Env["NCCL_PROTO"] != "LL" || slices.Contains(l.Argv, "sk-live-123") || !slices.Contains(l.Argv, "<redacted>") {
		t.Errorf("launch not redacted: %+v", l)
	}
	// Every start's fingerprint was published (no host: it says so).
	fps := count[event.ExperimentFingerprint](t, rig.rec, "4 fingerprints", 4)
	for _, fp := range fps {
		if !slices.Equal(fp.Fingerprint.Errors, []string{"no host to read the fingerprint from"}) || fp.Fingerprint.Launch == nil ||
			strings.Contains(fp.Fingerprint.CommandLine, "sk-live") {
			t.Errorf("fingerprint %+v", fp)
		}
	}
	// The order on the stream: each exp-end before the next exp-start.
	var seq []string
	for _, e := range rig.rec.snapshot() {
		switch p := e.Data.(type) {
		case event.ExperimentStart:
			seq = append(seq, "start "+p.ID)
		case event.ExperimentEnd:
			seq = append(seq, "end "+p.Exp)
		}
	}
	if want := []string{"start e1", "end e1", "start e2", "end e2", "start e3", "end e3", "start e4", "end e4"}; !slices.Equal(seq, want) {
		t.Errorf("order %v", seq)
	}
	lab.Close(context.Background())
}

// TestLabKeepsTypedText: what looks like a server log's escape whose ESC
// was lost ("[1m", "#033[0m") is text when the user types it, in a note,
// a name, a hypothesis and a conclusion: the journal keeps it as typed; a
// real escape sequence goes.
func TestLabKeepsTypedText(t *testing.T) {
	ctx := context.Background()
	lab := newLabRig(&Lab{Preset: "sglang"}).lab
	const in, want = "KV for [1m ctx] vs #033[0m \x1b[31mred, ünï", "KV for [1m ctx] vs #033[0m red, ünï"
	s, err := lab.Start(ctx, in, in)
	if err != nil || s.Name != want || s.Hypothesis != want {
		t.Fatalf("start %+v %v", s, err)
	}
	if n, err := lab.Note(ctx, in); err != nil || n.Text != want {
		t.Fatalf("note %+v %v", n, err)
	}
	if e, err := lab.End(ctx, in); err != nil || e.Conclusion != want {
		t.Fatalf("end %+v %v", e, err)
	}
}

func TestLabNotesAndManualExperiments(t *testing.T) {
	ctx := context.Background()
	rig := newLabRig(&Lab{Preset: "sglang"})
	lab := rig.lab
	if _, err := lab.End(ctx, "x"); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("End with none open: %v", err)
	}
	if err := lab.Update(ctx, event.ExperimentUpdate{Name: "x"}); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("Update with none open: %v", err)
	}
	n0, err := lab.Note(ctx, "  before any experiment \n")
	if err != nil || n0.Text != "before any experiment" || n0.Exp != "" {
		t.Fatalf("note %+v %v", n0, err)
	}
	if _, err := lab.Note(ctx, " \t "); !errors.Is(err, ErrEmptyNote) {
		t.Errorf("empty note: %v", err)
	}
	s, err := lab.Start(ctx, "baseline", "62 tok/s without NCCL tuning")
	if err != nil || s.ID != "e1" || s.Name != "baseline" || s.Trigger != event.TriggerKey || s.Launch != nil {
		t.Fatalf("start %+v %v", s, err)
	}
	n1, err := lab.Note(ctx, "bench started \x1b[31mred")
	if err != nil || n1.Exp != "e1" || n1.Text != "bench started red" {
		t.Fatalf("note %+v %v", n1, err)
	}
	if err := lab.Update(ctx, event.ExperimentUpdate{Hypothesis: "about 62"}); err != nil {
		t.Fatal(err)
	}
	if err := lab.Update(ctx, event.ExperimentUpdate{Exp: "e9", Name: "x"}); err == nil {
		t.Error("update of an unknown experiment")
	}
	cur, ok := lab.Current()
	if !ok || cur.ID != "e1" || cur.Hypothesis != "about 62" || len(cur.Notes) != 1 || cur.Notes[0].Text != n1.Text {
		t.Errorf("current %+v", cur)
	}
	// A second start ends the first.
	s2, err := lab.Start(ctx, "", "")
	if err != nil || s2.ID != "e2" || s2.Name != "sglang" {
		t.Fatalf("second start %+v %v", s2, err)
	}
	end, err := lab.End(ctx, "  no change ")
	if err != nil || end.Exp != "e2" || end.Conclusion != "no change" || end.Trigger != event.TriggerKey {
		t.Fatalf("end %+v %v", end, err)
	}
	lab.Key("K", "kill sglang pid 4123")
	count[event.Key](t, rig.rec, "the key", 1)
	xs := lab.Experiments()
	if len(xs) != 2 || xs[0].EndedBy != event.TriggerKey || xs[1].Conclusion != "no change" || xs[1].Open() {
		t.Errorf("experiments %+v", xs)
	}
	// Published in the order decided: start e1, note, update, end e1, start e2, end e2.
	var kinds []string
	for _, e := range rig.rec.snapshot() {
		switch e.Data.(type) {
		case event.ExperimentStart, event.ExperimentEnd, event.ExperimentUpdate, event.Note, event.Key:
			kinds = append(kinds, e.Data.Kind().String())
		}
	}
	want := []string{"note", "exp-start", "note", "exp-update", "exp-end", "exp-start", "exp-end", "key"}
	if !slices.Equal(kinds, want) {
		t.Errorf("published %v\nwant      %v", kinds, want)
	}
	// Close ends the open experiment with quit; nothing starts afterwards.
	if _, err := lab.Start(ctx, "last", ""); err != nil {
		t.Fatal(err)
	}
	lab.Close(ctx)
	ends := of[event.ExperimentEnd](rig.rec.snapshot())
	if last := ends[len(ends)-1]; last.Exp != "e3" || last.Trigger != event.TriggerQuit {
		t.Errorf("end at close %+v", last)
	}
	if _, err := lab.Start(ctx, "late", ""); !errors.Is(err, ErrLabClosed) {
		t.Errorf("start after close: %v", err)
	}
	rig.publish(event.Event{At: time.Now(), Data: launched("none")})
	if len(of[event.ExperimentStart](rig.rec.snapshot())) != 3 {
		t.Error("a launch after Close started an experiment")
	}
	lab.Close(ctx) // twice is fine
}

func TestRedactLaunchEnv(t *testing.T) {
	env := map[string]string{"HF_TOKEN": "a", "OPENAI_API_KEY": "b", "CLIENT_SECRET": "c", "DB_PASSWORD": "d",
		"GOOGLE_APPLICATION_CREDENTIALS": "e", "NCCL_ALGO": "Ring", "CUDA_VISIBLE_DEVICES": "0,1"}
	l := redactLaunch(event.LaunchInfo{Env: env, Argv: []string{"s", "--api-key=z"}})
	for k, v := range l.Env {
		secret := k != "NCCL_ALGO" && k != "CUDA_VISIBLE_DEVICES"
		if secret != (v == "<redacted>") || (!secret && v != env[k]) {
			t.Errorf("%s=%q", k, v)
		}
	}
	if env["HF_TOKEN"] != "a" {
		t.Error("the launch's own env was changed")
	}
	if cl := server.CommandLine(*l); strings.Contains(cl, "z") && !strings.Contains(cl, "<redacted>") {
		t.Errorf("command line %q", cl)
	}
}

func TestLabAdoptedServer(t *testing.T) {
	ctx := context.Background()
	rig := newLabRig(&Lab{Preset: "sglang"})
	rec := launched("nccl-debug").Record
	rec.Launch.Preset = "sglang-eagle3"
	rig.publish(event.Event{At: at(0), Data: event.ServerObserved{Found: event.ServerFound{Running: true, How: server.ByPidfile, Record: &rec, Exit: -1}}})
	rig.publish(event.Event{At: at(1), Data: event.ServerStatus{Phase: event.PhaseRunning, Preset: "sglang-eagle3", Profile: "nccl-debug", LogPath: rec.Launch.LogPath}})
	s, err := rig.lab.Start(ctx, "", "adopted")
	if err != nil || s.Name != "nccl-debug" || s.Launch != nil {
		t.Fatalf("start %+v %v", s, err)
	}
	fp := count[event.ExperimentFingerprint](t, rig.rec, "the fingerprint", 1)[0].Fingerprint
	if fp.Launch == nil || fp.Launch.Preset != "sglang-eagle3" || fp.Launch.Env["HF_TOKEN"] != "<redacted>" || rec.Launch.Env["HF_TOKEN"] != "hf_secret" {
		t.Errorf("fingerprint launch %+v", fp.Launch)
	}
	rig.lab.Close(ctx)
}

// BenchmarkLabObserveRate is the Lab's cost per tok/s sample of the
// stream, with an experiment open.
func BenchmarkLabObserveRate(b *testing.B) {
	lab := &Lab{Publish: func(event.Event) {}}
	lab.Observe(event.Event{At: at(0), Data: launched("none")})
	e := event.Event{At: at(1), Data: event.TokRate{TokPerSec: 89, Ranks: 8}}
	b.ReportAllocs()
	for b.Loop() {
		lab.Observe(e)
	}
	b.StopTimer()
	lab.Close(context.Background())
}

// TestLabNamesTheNewLaunch: at a relaunch the server's status still
// describes the old server (its log, its profile) when event.ServerLaunched
// arrives; the new experiment is named after the new launch.
func TestLabNamesTheNewLaunch(t *testing.T) {
	rig := newLabRig(&Lab{Preset: "sim"})
	old := status(event.PhaseReady, 5)
	old.Profile, old.LogPath = "none", "/logs/sim-old.log"
	for _, e := range []event.Event{
		{At: at(0), Data: event.RepoHead{Commit: "a6d51c0f00d", Short: "a6d51c0"}},
		{At: at(5), Data: old},
		{At: at(10), Data: launched("nccl-ll-ring")},
	} {
		rig.publish(e)
	}
	starts := count[event.ExperimentStart](t, rig.rec, "1 exp-start", 1)
	if got, want := starts[0].Name, "nccl-ll-ring @ a6d51c0"; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
}

// TestLabRelaunchTrigger: a relaunch kills the old server first; the
// experiment it ends is ended by the relaunch, a plain kill's by the kill.
func TestLabRelaunchTrigger(t *testing.T) {
	for _, c := range []struct {
		relaunch bool
		want     event.Trigger
	}{{true, event.TriggerRelaunch}, {false, event.TriggerKill}} {
		rig := newLabRig(&Lab{Preset: "sim"})
		for _, e := range []event.Event{
			{At: at(0), Data: status(event.PhaseNone, 0)},
			{At: at(1), Data: launched("none")},
			{At: at(2), Data: status(event.PhaseReady, 2)},
			{At: at(30), Data: event.KillStep{Step: "signalling", PID: 4100, Relaunch: c.relaunch}},
			{At: at(31), Data: event.KillStep{Step: "done", PID: 4100, Relaunch: c.relaunch}},
			{At: at(31), Data: status(event.PhaseKilled, 31)},
		} {
			rig.publish(e)
		}
		ends := count[event.ExperimentEnd](t, rig.rec, "1 exp-end", 1)
		if ends[0].Trigger != c.want {
			t.Errorf("relaunch %v: ended by %q, want %q", c.relaunch, ends[0].Trigger, c.want)
		}
	}
}

// TestLabNumbersAfterPrior: a session appended to a journal that holds e1
// and e2 starts at e3.
func TestLabNumbersAfterPrior(t *testing.T) {
	rig := newLabRig(&Lab{Preset: "sim", Numbered: 2})
	rig.publish(event.Event{At: at(1), Data: launched("none")})
	if s := count[event.ExperimentStart](t, rig.rec, "1 exp-start", 1)[0]; s.ID != "e3" {
		t.Errorf("id %s, want e3", s.ID)
	}
}

// TestLabEndsWhenTakenOver: another cockpit taking the driver lock ends
// the open experiment (its relaunches are not seen here, and the server
// is no longer this session's). Being unsure of the lock (the host does
// not answer) ends nothing: the lock may still be ours.
func TestLabEndsWhenTakenOver(t *testing.T) {
	{
		rig := newLabRig(&Lab{Preset: "sim"})
		rig.publish(event.Event{At: at(0), Data: status(event.PhaseNone, 0)})
		rig.publish(event.Event{At: at(1), Data: launched("none")})
		rig.publish(event.Event{At: at(60), Data: event.DriverState{Role: event.RoleUnsure}})
		rig.publish(event.Event{At: at(61), Data: event.DriverState{Role: event.RoleDriving}})
		if _, open := rig.lab.Current(); !open {
			t.Error("unsure ended the experiment")
		}
	}
	for _, role := range []event.DriverRole{event.RoleWatching} {
		rig := newLabRig(&Lab{Preset: "sim"})
		rig.publish(event.Event{At: at(0), Data: event.RepoHead{Commit: "a6d51c0f00d", Short: "a6d51c0"}})
		rig.publish(event.Event{At: at(0), Data: status(event.PhaseNone, 0)})
		rig.publish(event.Event{At: at(1), Data: launched("none")})
		rig.publish(event.Event{At: at(2), Data: event.DriverState{Role: event.RoleDriving}})
		rig.publish(event.Event{At: at(90), Data: event.DriverState{Role: role, Holder: event.DriverInfo{User: "bob", Machine: "desk"}}})
		ends := count[event.ExperimentEnd](t, rig.rec, "1 exp-end", 1)
		if ends[0].Exp != "e1" || ends[0].Trigger != event.TriggerTakenOver {
			t.Errorf("%v: end %+v", role, ends[0])
		}
		if _, open := rig.lab.Current(); open {
			t.Errorf("%v: an experiment is still open", role)
		}
	}
}
