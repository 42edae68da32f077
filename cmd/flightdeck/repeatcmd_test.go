package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
	"github.com/flightdeck-dev/flightdeck/sessions/journal"
	"github.com/flightdeck-dev/flightdeck/sessions/report"
)

// TestServerRepeatCLI: `server repeat` refuses a host with no server and a
// server flightdeck did not launch (leaving no journal); on a server
// `server launch` started, -n 1 --samples 3 makes 2 launches, each an
// experiment of the journal tagged repeat 1/2 and 2/2 with at least 3
// samples, prints each step on stderr and the launches with their spread
// on stdout.
func TestServerRepeatCLI(t *testing.T) {
	h, _, ssh := simHostConfig(t)
	args := func(a ...string) []string { return append(a, ssh...) }
	dir := t.TempDir()
	file := filepath.Join(dir, "repeat.jsonl")

	_, stderr, err := runCLI(t, nil, args("server", "repeat", "sim", "-n", "1", "--samples", "3", "--journal", file)...)
	wantExit1(t, err, "repeat with no server:\n"+stderr)
	if !strings.Contains(err.Error(), "no server running on ") || !strings.Contains(err.Error(), "flightdeck server launch sim") {
		t.Errorf("no server: %v", err)
	}

	// A server found by its port: flightdeck does not know its launch.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := h.StartServer(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for { // listening
		resp, err := http.Get(h.ServerURL() + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the simulated server never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, stderr, err = runCLI(t, nil, args("server", "repeat", "sim", "-n", "1", "--samples", "3", "--journal", file)...)
	wantExit1(t, err, "repeat of an adopted server:\n"+stderr)
	if !strings.Contains(err.Error(), "not launched by flightdeck") {
		t.Errorf("adopted: %v", err)
	}
	if err := h.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a refused repeat made its journal: %v", err)
	}

	_, stderr, err = runCLI(t, nil, args("server", "launch", "sim", "--yes", "--timeout", "60s")...)
	wantExit(t, err, 0, "launch:\n"+stderr)

	out, stderr, err := runCLI(t, nil, args("server", "repeat", "sim", "-n", "1", "--samples", "3", "--max-wait", "2m", "--journal", file)...)
	wantExit(t, err, 0, "repeat:\n"+stderr+"\nstdout:\n"+out)
	for _, want := range []string{
		"experiment e1 ", " started for the running launch\n",
		"repeat 1/2 of e1: measuring ", // 3/3, or more: the 200 ms poll can see two samples at once
		"repeat 2/2 of e1: relaunching\n",
		"repeat 2/2 of e1: done (e2)\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	lines := strings.Split(out, "\n")
	for _, want := range []string{"LAUNCH  ID  NAME", "1/2     e1  ", "2/2     e2  ", "A/A noise (spread of the launch medians): tok/s (server log) ", "journal: " + file} {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("stdout lacks a line starting %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "over 2 launches, ±") {
		t.Errorf("no spread over 2 launches:\n%s", out)
	}

	// The journal holds both launches, tagged, with their results.
	j, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := report.ReadReport(j.Header(), j.Scan, false)
	if err != nil {
		t.Fatal(err)
	}
	xs := r.Ledger.Experiments()
	var tags []string
	for _, x := range xs {
		tag := "untagged"
		if x.Repeat != nil {
			tag = fmt.Sprintf("%d/%d of %s", x.Repeat.I, x.Repeat.N, x.Repeat.Series)
		}
		tags = append(tags, x.ID+" "+tag)
		if x.Result.N < 3 || x.Result.Median <= 0 {
			t.Errorf("%s: result %+v", x.ID, x.Result)
		}
	}
	if want := []string{"e1 1/2 of e1", "e2 2/2 of e1"}; !slices.Equal(tags, want) {
		t.Fatalf("experiments %q, want %q", tags, want)
	}
	if xs[0].StartedBy != event.TriggerKey || xs[1].StartedBy != event.TriggerLaunch || xs[0].EndedBy != event.TriggerRelaunch || xs[1].EndedBy != event.TriggerQuit {
		t.Errorf("e1 %s..%s, e2 %s..%s", xs[0].StartedBy, xs[0].EndedBy, xs[1].StartedBy, xs[1].EndedBy)
	}
	if r.Header.Label != "repeat" {
		t.Errorf("header %+v", r.Header)
	}
	// The server keeps running, relaunched.
	_, _, err = runCLI(t, nil, args("server", "status", "sim")...)
	wantExit(t, err, 0, "status after the repeat")

	// Stopped (Ctrl-C) as it relaunches, a repeat appended to the same
	// journal lets the launch finish, ends its experiment and writes the
	// journal; it exits 1.
	root := newRootCmd()
	var sout strings.Builder
	serr := &syncBuffer{}
	root.SetArgs(args("server", "repeat", "sim", "-n", "3", "--samples", "3", "--journal", file))
	root.SetOut(&sout)
	root.SetErr(serr)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- root.ExecuteContext(rctx) }()
	for !strings.Contains(serr.String(), "repeat 2/4 of e3: relaunching") {
		select {
		case err := <-errc:
			t.Fatalf("repeat ended before its relaunch: %v\n%s", err, serr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	err = <-errc
	wantExit(t, err, 1, "stopped repeat:\n"+serr.String())
	if got := serr.String(); !strings.Contains(got, "repeat 2/4 of e3: stopped (e4): cancelled\n") || !strings.HasSuffix(got, "flightdeck: repeat stopped\n") {
		t.Errorf("stderr:\n%s", got)
	}
	if !strings.Contains(sout.String(), "2/4     e4  ") {
		t.Errorf("stdout lacks the launch stopped:\n%s", sout.String())
	}
	j2, err := journal.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	r, err = report.ReadReport(j2.Header(), j2.Scan, false)
	if err != nil {
		t.Fatal(err)
	}
	xs = r.Ledger.Experiments()
	if len(xs) != 4 || xs[3].Repeat == nil || xs[3].Repeat.I != 2 || xs[3].Repeat.N != 4 || xs[3].Open() || xs[2].EndedBy != event.TriggerRelaunch {
		t.Errorf("after the stopped repeat: %d experiments, last %+v", len(xs), xs[len(xs)-1])
	}
	_, _, err = runCLI(t, nil, args("server", "status", "sim")...)
	wantExit(t, err, 0, "status after the stopped repeat: the relaunch finished")
}

// syncBuffer is a strings.Builder safe for a writer and a reader in
// different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// wantExit1 checks that err makes main exit with status 1: an exitCode(1),
// or an error main prints.
func wantExit1(t *testing.T, err error, what string) {
	t.Helper()
	var ec exitCode
	if err == nil || (errors.As(err, &ec) && ec != 1) {
		t.Fatalf("%s: err %v, want exit status 1", what, err)
	}
}

// TestServerRepeatFlags: bad flags exit 2 before anything connects.
func TestServerRepeatFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-journal"}, "--no-journal: a repeat needs a journal"},
		{[]string{"--no-journal", "--journal", "x.jsonl"}, "--no-journal: a repeat needs a journal"},
		{[]string{"-n", "0"}, "-n/--launches 0: want how many more launches, at least 1"},
		{[]string{"--launches", "-2"}, "-n/--launches -2"},
		{[]string{"--samples", "0"}, "--samples 0: want at least 3"},
		{[]string{"--samples", "2"}, "--samples 2: want at least 3 (a comparison counts a launch from 3 steady samples)"},
		{[]string{"--max-wait", "0s"}, "--max-wait 0s: want a positive duration"},
		{[]string{"--interval", "1ms"}, "--interval 1ms is too short"},
		{[]string{"--grace", "-1s"}, "--grace and --gpu-timeout must not be negative"},
		{[]string{"--samples", "x"}, `invalid argument "x" for "--samples"`},
		{nil, "accepts 1 arg(s), received 0"},
	} {
		args := []string{"server", "repeat"}
		if tc.args != nil || !strings.Contains(tc.want, "received 0") {
			args = append(args, "nowhere.invalid")
		}
		_, stderr, err := runCLI(t, nil, append(args, tc.args...)...)
		wantExit(t, err, exitRefused, fmt.Sprint(tc.args))
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr %q, want %q", tc.args, stderr, tc.want)
		}
	}
}

// TestRepeatLine: the progress lines say what the cockpit's banner says.
func TestRepeatLine(t *testing.T) {
	for _, tc := range []struct {
		p    event.RepeatProgress
		want string
	}{
		{event.RepeatProgress{Series: "e1", I: 1, N: 5, Exp: "e1", Phase: sessions.RepeatMeasuring, Samples: 3, Need: 10}, "repeat 1/5 of e1: measuring 3/10 (e1)"},
		{event.RepeatProgress{Series: "e1", I: 2, N: 5, Phase: sessions.RepeatRelaunching, Need: 10}, "repeat 2/5 of e1: relaunching"},
		{event.RepeatProgress{Series: "e1", I: 2, N: 5, Exp: "e2", Phase: sessions.RepeatWarmingUp, Need: 10}, "repeat 2/5 of e1: warming up 0/10 (e2)"},
		{event.RepeatProgress{Series: "e1", I: 3, N: 5, Exp: "e3", Phase: sessions.RepeatBenchmark, Samples: 10, Need: 10}, "repeat 3/5 of e1: benchmarking (e3)"},
		{event.RepeatProgress{Series: "e1", I: 3, N: 5, Exp: "e3", Phase: sessions.RepeatFailed, Err: "launch 3/5 (e3): the server failed (oom): \x1b[31mCUDA"}, "repeat 3/5 of e1: failed (e3): launch 3/5 (e3): the server failed (oom): CUDA"},
		{event.RepeatProgress{Series: "e1", I: 2, N: 2, Exp: "e2", Phase: sessions.RepeatStopped, Err: "cancelled"}, "repeat 2/2 of e1: stopped (e2): cancelled"},
	} {
		if got := repeatLine(tc.p); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.p, got, tc.want)
		}
	}
}

// TestSpreadText: the A/A line, and why there is none.
func TestSpreadText(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want string
	}{
		{[]float64{62.5, 61.9, 63.1}, "tok/s 61.9–63.1 over 3 launches, ±1.0%"},
		{[]float64{62.5}, "tok/s not measured: a spread needs 2 launches with a value, and 1 had one"},
		{nil, "tok/s not measured: a spread needs 2 launches with a value, and 0 had one"},
	} {
		if got := spreadText("tok/s", tc.v); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.v, got, tc.want)
		}
	}
}
