package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/server"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// repeatRig is the cockpit below the screen on a simulated host: the live
// probes with a server Control, and the Lab observing the stream.
type repeatRig struct {
	*labRig
	h    *sim.Host
	host remote.Host
	ctl  *Control
}

// newRepeatRig starts a simulated host (fast clock, short start-up), the
// live probes and the Lab, and launches the server with the sim preset
// (the nccl-ll-ring profile unless profile says otherwise); workdir, when
// set, is the launch's working directory, and extra its extra flags; with
// repo the Lab's fingerprints read the sim's checkout.
func newRepeatRig(t *testing.T, ctx context.Context, workdir, extra string) *repeatRig {
	return newSimRig(t, ctx, simRigOptions{workdir: workdir, extra: extra, profile: "nccl-ll-ring"})
}

// simRigOptions are newSimRig's choices.
type simRigOptions struct {
	workdir, extra, profile string
	repo                    bool
}

func newSimRig(t *testing.T, ctx context.Context, o simRigOptions) *repeatRig {
	t.Helper()
	h, err := sim.Start(ctx, sim.Options{GPUs: 2, TimeScale: 10, StartupDelay: time.Second, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
		IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	target := simTarget(h, o.profile)
	target.TP = 2
	if o.workdir != "" {
		target.Workdir = o.workdir
	}
	lab := &Lab{Host: host, Config: config.Builtins(), Preset: "sim", ProbeTimeout: 3 * time.Second}
	if o.repo {
		lab.RepoPath = h.RepoPath
	}
	ctl := &Control{Host: host, Config: config.Builtins(), Target: target, NoProcessMatch: true, Grace: time.Second, GPUTimeout: 30 * time.Second}
	rig := &repeatRig{labRig: newLabRig(lab), h: h, host: host, ctl: ctl}
	liveCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- RunLive(liveCtx, LiveConfig{Host: host, Interval: 200 * time.Millisecond, Control: ctl}, rig.publish)
	}()
	t.Cleanup(func() {
		rig.lab.Close(context.Background())
		stop()
		<-done
	})
	rig.rec.waitFor(t, "the first server status", 20*time.Second, func(es []event.Event) bool { _, ok := lastStatus(es); return ok })
	req := ctl.Request()
	req.Extra = o.extra
	plan, err := ctl.Plan(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Launch(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if _, ok := rig.lab.Current(); !ok {
		t.Fatal("the launch started no experiment")
	}
	return rig
}

// progress returns the RepeatProgress events published so far.
func (r *repeatRig) progress() []event.RepeatProgress {
	return of[event.RepeatProgress](r.rec.snapshot())
}

// TestRepeatRelaunchesAndTagsEachLaunch: a repeat of N=2 from the running
// server's experiment measures it, relaunches the same launch twice and
// measures each; the three experiments are tagged 1/3, 2/3, 3/3, each
// ended with a result of at least MinSamples samples (the last still
// open), each benchmarked once; the progress goes through the phases to
// done; a second repeat at the same time is refused.
func TestRepeatRelaunchesAndTagsEachLaunch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rig := newRepeatRig(t, ctx, "", "")
	bn := &Bencher{Dialer: rig.host.(remote.Dialer), Port: func() int { return rig.h.ServerPort }, Publish: rig.publish,
		Experiment: func() string { cur, _ := rig.lab.Current(); return cur.ID }}
	rig.rec.waitFor(t, "the server ready", time.Minute, phaseIs(event.PhaseReady))
	if _, err := bn.Run(ctx, event.BenchConfig{Requests: 2, OutputLen: 8, InputLen: 8}); err != nil { // the defaults the repeat's runs take
		t.Fatal(err)
	}
	rp := &Repeater{Control: rig.ctl, Lab: rig.lab, Bencher: bn, Publish: rig.publish}
	errc := make(chan error, 1)
	go func() { errc <- rp.Run(ctx, RepeatConfig{N: 2, MinSamples: 3, MaxWait: time.Minute, Bench: true}) }()
	rig.rec.waitFor(t, "the repeat to begin", 20*time.Second, func(es []event.Event) bool { return len(of[event.RepeatProgress](es)) > 0 })
	if err := rp.Run(ctx, RepeatConfig{N: 1}); !errors.Is(err, ErrRepeatBusy) {
		t.Errorf("a second repeat: %v, want ErrRepeatBusy", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("repeat: %v", err)
	}
	reps := of[event.Repeat](rig.rec.snapshot())
	var tags []string
	for _, r := range reps {
		tags = append(tags, fmt.Sprintf("%s %d/%d of %s", r.Exp, r.I, r.N, r.Series))
	}
	if want := []string{"e1 1/3 of e1", "e2 2/3 of e1", "e3 3/3 of e1"}; !slices.Equal(tags, want) {
		t.Fatalf("tags %q, want %q", tags, want)
	}
	xs := rig.lab.Experiments()
	if len(xs) != 3 {
		t.Fatalf("%d experiments", len(xs))
	}
	for i, x := range xs {
		if !strings.HasSuffix(x.Name, fmt.Sprintf(" #%d/3", i+1)) || x.StartedBy != event.TriggerLaunch {
			t.Errorf("%s: named %q, started by %s", x.ID, x.Name, x.StartedBy)
		}
		if i < 2 && (x.EndedBy != event.TriggerRelaunch || x.Result.N < 3) {
			t.Errorf("%s: ended by %q with %d samples", x.ID, x.EndedBy, x.Result.N)
		}
	}
	if res, open := rig.lab.provisionalOf("e3"); !open || res.N < 3 {
		t.Errorf("the last launch: open %v, %d samples", open, res.N)
	}
	var benched []string
	for _, d := range of[event.BenchDone](rig.rec.snapshot()) {
		if d.Err != "" || d.Result == nil || d.Result.Completed != 2 {
			t.Errorf("bench %s: %+v", d.ID, d)
		}
		benched = append(benched, d.ID+" "+d.Exp)
	}
	if want := []string{"b1 e1", "b2 e1", "b3 e2", "b4 e3"}; !slices.Equal(benched, want) {
		t.Errorf("benchmarked %q, want %q", benched, want)
	}
	// Every launch was measured and benchmarked; the last progress is done.
	seen := map[string]bool{}
	for _, p := range rig.progress() {
		if p.Series != "e1" || p.N != 3 {
			t.Errorf("progress %+v", p)
		}
		seen[fmt.Sprintf("%d %s", p.I, p.Phase)] = true
	}
	for _, want := range []string{"1 measuring", "1 benchmarking", "2 relaunching", "2 measuring", "2 benchmarking", "3 relaunching", "3 benchmarking", "3 done"} {
		if !seen[want] {
			t.Errorf("no progress %q", want)
		}
	}
	ps := rig.progress()
	if last := ps[len(ps)-1]; last.Phase != RepeatDone || last.Exp != "e3" || last.Err != "" {
		t.Errorf("last progress %+v", last)
	}
}

// TestRepeatCancelledDuringARelaunch: cancelled as it relaunches, the
// repeat lets the launch finish (the server is not left killed), tags it,
// and stops there with ctx's error and a last progress "stopped".
func TestRepeatCancelledDuringARelaunch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rig := newRepeatRig(t, ctx, "", "")
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	publish := func(e event.Event) {
		if p, ok := e.Data.(event.RepeatProgress); ok && p.Phase == RepeatRelaunching {
			stop()
		}
		rig.publish(e)
	}
	rp := &Repeater{Control: rig.ctl, Lab: rig.lab, Publish: publish}
	err := rp.Run(rctx, RepeatConfig{N: 3, MinSamples: 3, MaxWait: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("repeat: %v, want context.Canceled", err)
	}
	ps := rig.progress()
	if last := ps[len(ps)-1]; last.Phase != RepeatStopped || last.I != 2 || last.Exp != "e2" {
		t.Errorf("last progress %+v", last)
	}
	if cur, ok := rig.lab.Current(); !ok || cur.ID != "e2" || !strings.HasSuffix(cur.Name, " #2/4") {
		t.Errorf("current %+v", cur)
	}
	rig.rec.waitFor(t, "the relaunched server ready", time.Minute, phaseIs(event.PhaseReady))
	// A new repeat may begin: the first one let go.
	if err := rp.Run(rctx, RepeatConfig{N: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("a repeat under a cancelled ctx: %v", err)
	}
}

// TestRepeatStopsWhenARelaunchFails: the launch's working directory
// vanishes after the first launch; the relaunch fails, and the repeat
// stops with an error naming the launch and the cause.
func TestRepeatStopsWhenARelaunchFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wd := filepath.Join(t.TempDir(), "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	rig := newRepeatRig(t, ctx, wd, "")
	if err := os.Remove(wd); err != nil {
		t.Fatal(err)
	}
	rp := &Repeater{Control: rig.ctl, Lab: rig.lab, Publish: rig.publish}
	err := rp.Run(ctx, RepeatConfig{N: 2, MinSamples: 3, MaxWait: time.Minute})
	if err == nil || !strings.HasPrefix(err.Error(), "launch 2/3: relaunch: ") {
		t.Fatalf("repeat: %v, want the relaunch's failure", err)
	}
	ps := rig.progress()
	if last := ps[len(ps)-1]; last.Phase != RepeatFailed || last.Err != err.Error() || last.I != 2 {
		t.Errorf("last progress %+v", last)
	}
	// Nothing but the series was launched: its tag is taken back (the
	// journal's last word: a repeat of 1 launch) and its name is its own
	// again.
	tags := of[event.Repeat](rig.rec.snapshot())
	if len(tags) != 2 || tags[0] != (event.Repeat{Exp: "e1", Series: "e1", I: 1, N: 3}) || tags[1] != (event.Repeat{Exp: "e1", Series: "e1", I: 1, N: 1}) {
		t.Errorf("tags %+v: want e1 as 1/3, then 1/1 (the failed launch untagged)", tags)
	}
	if xs := rig.lab.Experiments(); len(xs) != 1 || strings.Contains(xs[0].Name, "#") {
		t.Errorf("experiments %+v: want e1 with its name back", xs)
	}
	if ps := rig.progress(); slices.IndexFunc(ps, func(p event.RepeatProgress) bool { return p.Phase == RepeatFailed }) != len(ps)-1 {
		t.Error("the failure is not the last progress")
	}
}

// TestRepeatStopsWhenTheServerDies: the server crashes while its launch
// is measured; the repeat stops with the failure, relaunching nothing.
func TestRepeatStopsWhenTheServerDies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rig := newRepeatRig(t, ctx, "", "--sim-fail crash-after-ready=20")
	rp := &Repeater{Control: rig.ctl, Lab: rig.lab, Publish: rig.publish}
	err := rp.Run(ctx, RepeatConfig{N: 2, MinSamples: 50, MaxWait: time.Minute})
	if err == nil || !strings.HasPrefix(err.Error(), "launch 1/3 (e1): the server failed (cuda-illegal-memory): ") {
		t.Fatalf("repeat: %v, want the crash", err)
	}
	if len(rig.lab.Experiments()) != 1 || slices.ContainsFunc(rig.progress(), func(p event.RepeatProgress) bool { return p.Phase == RepeatRelaunching }) {
		t.Error("relaunched after the crash")
	}
}

// TestRepeatStopsAfterMaxWait: a launch that does not reach MinSamples in
// MaxWait stops the repeat, saying how far it got.
func TestRepeatStopsAfterMaxWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rig := newRepeatRig(t, ctx, "", "")
	rp := &Repeater{Control: rig.ctl, Lab: rig.lab, Publish: rig.publish}
	err := rp.Run(ctx, RepeatConfig{N: 1, MinSamples: 1000, MaxWait: time.Second})
	if err == nil || !strings.HasPrefix(err.Error(), "launch 1/2 (e1): ") || !strings.HasSuffix(err.Error(), " of 1000 steady samples after 1s (max wait)") {
		t.Fatalf("repeat: %v", err)
	}
}

// TestRepeatRefusals: what a repeat needs, said before anything is
// relaunched.
func TestRepeatRefusals(t *testing.T) {
	ctx := context.Background()
	if err := (&Repeater{}).Run(ctx, RepeatConfig{}); !errors.Is(err, ErrNoLab) {
		t.Errorf("no Lab: %v", err)
	}
	rig := newLabRig(&Lab{Preset: "sim"})
	defer rig.lab.Close(ctx)
	ctl := &Control{Config: config.Builtins(), Target: config.Host{Preset: "sim", Model: "/m", TP: 2}}
	rp := &Repeater{Control: ctl, Lab: rig.lab}
	for _, tc := range []struct {
		cfg  RepeatConfig
		want string
	}{
		{RepeatConfig{N: -1}, "repeat: N -1: want how many more launches, at least 1"},
		{RepeatConfig{MinSamples: -2}, "repeat: -2 samples a launch: want at least 3 (a comparison counts a launch from 3)"},
		{RepeatConfig{MinSamples: 2}, "repeat: 2 samples a launch: want at least 3 (a comparison counts a launch from 3)"},
		{RepeatConfig{Bench: true}, "repeat: the benchmark is not available in this session"},
		{RepeatConfig{}, "no server running"},
	} {
		if err := rp.Run(ctx, tc.cfg); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// Adopted by its port: no launch to repeat.
	rig.publish(event.Event{At: time.Now(), Data: event.ServerStatus{Phase: event.PhaseRunning, How: server.ByPort, Server: "sglang", Port: 30000}})
	if err := rp.Run(ctx, RepeatConfig{}); !errors.Is(err, ErrNotLaunched) {
		t.Errorf("adopted by port: %v", err)
	}
	// Launched by flightdeck, but the experiment was ended by hand.
	l := launched("none")
	rig.publish(event.Event{At: time.Now(), Data: l})
	rig.publish(event.Event{At: time.Now(), Data: event.ServerStatus{Phase: event.PhaseLaunching, How: server.ByPidfile, Preset: "sim", Server: "sglang"}})
	if _, err := rig.lab.End(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := rp.Run(ctx, RepeatConfig{}); !errors.Is(err, ErrNoExperiment) {
		t.Errorf("no open experiment: %v", err)
	}
	// A launch request that is not the running server's launch.
	if _, err := rig.lab.Start(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := rp.Run(ctx, RepeatConfig{}); err == nil || !strings.HasPrefix(err.Error(), "repeat: the next launch would differ from the running server's (command line flightdeck sim server ") {
		t.Errorf("another launch: %v", err)
	}
	if len(of[event.RepeatProgress](rig.rec.snapshot())) != 0 || len(of[event.Repeat](rig.rec.snapshot())) != 0 {
		t.Error("a refused repeat published progress or tags")
	}
}

// fakeOpenAI is a loopback OpenAI-style server: GET /v1/models, and
// POST /v1/completions answered by respond (request n, 0-based, warm-up
// included). It returns the port.
func fakeOpenAI(t *testing.T, respond func(n int, w http.ResponseWriter)) int {
	t.Helper()
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"data":[{"id":"m"}]}`)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		respond(int(n.Add(1)-1), w)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

func okStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, `data: {"choices":[{"text":" a","finish_reason":null}]}`+"\n\n"+
		`data: {"choices":[{"text":" b","finish_reason":"length"}]}`+"\n\n"+
		`data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}`+"\n\ndata: [DONE]\n\n")
}

func notReady(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"message":"The server is not ready."}`)
}

// TestRepeatBenchCountsOnlyAWholeRun: the repeat's benchmark of a launch
// is done only when every request succeeded. A run stopped in its
// measured part (Bencher.Run returns the partial result and no error)
// stops the repeat with ctx's error — it once reported the repeat done —;
// a run where requests failed is an error saying how many.
func TestRepeatBenchCountsOnlyAWholeRun(t *testing.T) {
	cfg := event.BenchConfig{Requests: 3, InputLen: 4, OutputLen: 2}
	for _, tc := range []struct {
		name    string
		respond func(n int, w http.ResponseWriter, cancel func())
		want    string // "" for success; "cancelled" for context.Canceled
	}{
		{"all succeed", func(_ int, w http.ResponseWriter, _ func()) { okStream(w) }, ""},
		{"stopped in the measured part", func(n int, w http.ResponseWriter, cancel func()) {
			if n == 2 { // the warm-up and one measured request finished
				cancel()
				time.Sleep(20 * time.Millisecond)
			}
			okStream(w)
		}, "cancelled"},
		{"some failed", func(n int, w http.ResponseWriter, _ func()) {
			if n == 2 {
				notReady(w)
				return
			}
			okStream(w)
		}, "launch 2/3 (e2): benchmark: 1 of 3 requests failed: HTTP 503: The server is not ready."},
		{"none succeeded", func(n int, w http.ResponseWriter, _ func()) {
			if n > 0 {
				notReady(w)
				return
			}
			okStream(w)
		}, "launch 2/3 (e2): benchmark: no request succeeded (3 failed): HTTP 503: The server is not ready."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			port := fakeOpenAI(t, func(n int, w http.ResponseWriter) { tc.respond(n, w, cancel) })
			var log eventLog
			bn := &Bencher{Dialer: remote.NewLocal(), Port: func() int { return port }, Publish: log.sink}
			last := cfg.Defaults() // as after a first run: the repeat's runs take it
			bn.last = &last
			run := &repeatRun{r: &Repeater{Bencher: bn, Publish: log.sink}, cfg: RepeatConfig{MinSamples: 3}, series: "e1", n: 3}
			err := run.bench(ctx, 2, "e2")
			switch tc.want {
			case "":
				if err != nil {
					t.Fatalf("bench: %v", err)
				}
			case "cancelled":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("bench: %v, want context.Canceled", err)
				}
			default:
				if err == nil || err.Error() != tc.want {
					t.Fatalf("bench: %v, want %q", err, tc.want)
				}
			}
		})
	}
}
