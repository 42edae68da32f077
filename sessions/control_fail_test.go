package sessions

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sim"
	"github.com/flightdeck-dev/flightdeck/sessions/config"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// firstClassified watches a local log file and returns when a line that
// serverlog classifies as a failure first appears in it.
func firstClassified(ctx context.Context, path func() string) <-chan time.Time {
	out := make(chan time.Time, 1)
	go func() {
		var c serverlog.Classifier
		for ctx.Err() == nil {
			if p := path(); p != "" {
				b, _ := os.ReadFile(p)
				sc := bufio.NewScanner(bytes.NewReader(b))
				sc.Buffer(nil, 1<<20)
				c = serverlog.Classifier{}
				n := 0
				for sc.Scan() {
					n++
					if len(c.Feed(nil, sc.Bytes(), n)) > 0 {
						out <- time.Now()
						return
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return out
}

// TestLaunchFailureClassification launches the simulated server in each of
// its failure modes and checks the cockpit's status says failed, with the
// right class and the offending line, within 2 s of that line reaching the
// log.
func TestLaunchFailureClassification(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extra   string
		busy    bool // occupy the port first
		classes []string
	}{
		{"oom at start", "--sim-fail oom", false, []string{"oom"}},
		{"port in use", "", true, []string{"port-in-use"}},
		{"crash after ready", "--sim-fail crash-after-ready=12", false, []string{"cuda-illegal-memory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			h, err := sim.Start(ctx, sim.Options{TimeScale: 4, StartupDelay: 2 * time.Second, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if tc.busy {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(h.ServerPort))
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			host, err := remote.DialSSH(ctx, h.Target(), remote.SSHOptions{ConfigFile: os.DevNull,
				IdentityFiles: []string{h.IdentityPath}, KnownHostsFiles: []string{h.KnownHostsPath}, NoAgent: true})
			if err != nil {
				t.Fatal(err)
			}
			defer host.Close()
			ctl := &Control{Host: host, Config: config.Builtins(), Target: simTarget(h, "none"), NoProcessMatch: true, Grace: time.Second, GPUTimeout: 10 * time.Second}
			var mu sync.Mutex
			var failedAt time.Time
			rec := newRecorder()
			sink := func(e event.Event) {
				if st, ok := e.Data.(event.ServerStatus); ok && st.Phase == event.PhaseFailed {
					mu.Lock()
					if failedAt.IsZero() {
						failedAt = time.Now()
					}
					mu.Unlock()
				}
				rec.sink(e)
			}
			var logPath string
			var pathMu sync.Mutex
			lineAt := firstClassified(ctx, func() string { pathMu.Lock(); defer pathMu.Unlock(); return logPath })
			liveCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- RunLive(liveCtx, LiveConfig{Host: host, Interval: 500 * time.Millisecond, Control: ctl}, sink)
			}()
			defer func() { stop(); <-done }()
			req := ctl.Request()
			req.Extra = tc.extra
			plan, err := ctl.Plan(req)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ctl.Launch(ctx, plan)
			if err != nil {
				t.Fatal(err)
			}
			pathMu.Lock()
			logPath = r.Launch.LogPath
			pathMu.Unlock()
			defer func() {
				if t.Failed() {
					for _, e := range rec.snapshot() {
						switch p := e.Data.(type) {
						case event.ServerStatus, event.ServerFailure, event.ServerReady, event.ServerObserved:
							t.Logf("%T %+v", p, p)
						}
					}
				}
			}()
			if tc.extra == "--sim-fail crash-after-ready=12" {
				rec.waitFor(t, "ready before the crash", 20*time.Second, phaseIs(event.PhaseReady))
			}
			// A traceback's header can be classified before the line that
			// names its exception reaches the log; the status then refines
			// the class. Wait for the refined one.
			classOK := func(st event.ServerStatus) bool {
				for _, c := range tc.classes {
					if st.Class == c {
						return true
					}
				}
				return false
			}
			rec.waitFor(t, "failed with the expected class", 20*time.Second, func(es []event.Event) bool {
				st, ok := lastStatus(es)
				return ok && st.Phase == event.PhaseFailed && classOK(st)
			})
			st, _ := lastStatus(rec.snapshot())
			if !classOK(st) || st.Text == "" {
				t.Errorf("failed status %+v, want class in %v with the offending line", st, tc.classes)
			}
			var at time.Time
			select {
			case at = <-lineAt:
			case <-time.After(5 * time.Second):
				t.Fatal("the failure line never showed in the log file")
			}
			mu.Lock()
			lag := failedAt.Sub(at)
			mu.Unlock()
			if lag > 2*time.Second {
				t.Errorf("status failed %v after the line reached the log, want ≤ 2s", lag)
			}
			t.Logf("%s: %s %q, %v after the line", tc.name, st.Class, st.Text, lag.Round(time.Millisecond))
			// The process ends by itself: the status keeps the failure and
			// gains the exit status.
			rec.waitFor(t, "exit status recorded", 30*time.Second, func(es []event.Event) bool {
				st, ok := lastStatus(es)
				return ok && st.Phase == event.PhaseFailed && st.Exit == 1
			})
		})
	}
}
