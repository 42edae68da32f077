package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightdeck-dev/flightdeck/remote/sim/simtest"
)

func TestMain(m *testing.M) {
	simtest.Setup()
	// Cockpits record journals by default: the tests' (and the binaries
	// they run in tmux) go to a directory of their own, never the user's
	// ~/.local/state.
	state, err := os.MkdirTemp("", "flightdeck-test-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	// tmux servers of the end-to-end tests put their sockets here, removed
	// at the end (tmux leaves a killed server's socket file behind).
	tmuxDir, err := os.MkdirTemp("", "fd-tmux-")
	if err != nil {
		panic(err)
	}
	os.Setenv("TMUX_TMPDIR", tmuxDir)
	code := m.Run()
	os.RemoveAll(tmuxDir)
	removeMirrors(os.Getpid()) // those of the in-process commands
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.RemoveAll(state)
	os.Exit(code)
}

// runCLI runs the command line in-process and returns stdout, stderr and
// the error Execute returned.
func runCLI(t *testing.T, stdin io.Reader, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	if stdin != nil {
		root.SetIn(stdin)
	}
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func TestParseLogCLI(t *testing.T) {
	out, _, err := runCLI(t, nil, "parse", "log", "testdata/sglang-decode-eagle3-2025-10.txt")
	if err != nil {
		t.Fatal(err)
	}
	// Line 1 of the file is the fixture's source line, line 2 a prefill,
	// line 4 the first steady decode line after the idle one.
	for _, want := range []string{
		`{"type":"throughput","tok_s":0.39,"rank":"TP0","accept_length":2.17,"accept_rate":0.54,`,
		`{"type":"throughput","tok_s":178.86,"rank":"TP0","accept_length":1.95,"accept_rate":0.49,`,
		`"line":4}`,
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %s\n%s", want, out)
		}
	}
	if n := strings.Count(out, `"type":"throughput"`); n != 5 {
		t.Errorf("%d throughput records, want 5", n)
	}
}

func TestParseLogCLIReadsStdin(t *testing.T) {
	in := strings.NewReader("[2025-10-22 10:27:58] The server is fired up and ready to roll!\n")
	out, _, err := runCLI(t, in, "parse", "log", "-")
	if err != nil || strings.TrimSpace(out) != `{"type":"ready","server":"sglang","line":1}` {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestParseGPUCLI(t *testing.T) {
	out, _, err := runCLI(t, nil, "parse", "gpu", "testdata/failure-gpu-lost.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"type":"failure"`, `"failure_class":"gpu-lost"`, `"pci_bus_id":"0000:01:00.0"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: %s", want, out)
		}
	}

	in := strings.NewReader("0, 97, [N/A]\n1, 95, 61\nthis is not csv\n")
	out, errOut, err := runCLI(t, in, "parse", "gpu", "--fields", "index,utilization.gpu,temperature.gpu", "-")
	var ec exitCode
	if !errors.As(err, &ec) || ec != 1 {
		t.Fatalf("err = %v, want exit status 1 for a garbled row", err)
	}
	if !strings.Contains(errOut, "3") {
		t.Errorf("stderr does not name line 3: %q", errOut)
	}
	if !strings.Contains(out, `"index":0,`) || !strings.Contains(out, `"temp_c":"[N/A]"`) || !strings.Contains(out, `"temp_c":61`) {
		t.Errorf("good rows not written, or [N/A] not kept: %s", out)
	}
}

func TestParseMissingFile(t *testing.T) {
	_, _, err := runCLI(t, nil, "parse", "log", "testdata/does-not-exist.log")
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want not-exist", err)
	}
}

func TestVersionCLI(t *testing.T) {
	out, _, err := runCLI(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "flightdeck ") {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestDemoFlagValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--gpus", "0"}, "--gpus 0: want 1 to"},
		{[]string{"demo", "--gpus", "100"}, "--gpus 100: want 1 to"},
		{[]string{"demo", "--interval", "0"}, "too short"},
		{[]string{"demo", "--fault", "lost=8"}, "GPU 8 does not exist (--gpus 8: 0 to 7)"},
		{[]string{"demo", "--gpus", "16", "--fault", "thermal=-1"}, "GPU -1 does not exist"},
		{[]string{"demo", "--fault", "stall=1"}, "stall takes no GPU"},
		{[]string{"demo", "--fault", "melt=1"}, `unknown fault "melt"`},
		{[]string{"demo", "--replay-log", "testdata"}, "--replay-log testdata: not a regular file"},
		{[]string{"demo", "--gpu-capture", "testdata/nope.txt"}, "--gpu-capture: stat testdata/nope.txt"},
		{[]string{"demo", "--history", "1"}, "--history 1: want 2 to 1000"},
		{[]string{"demo", "--history", "1001"}, "--history 1001: want 2 to 1000"},
		{[]string{"sim", "host", "--history", "0"}, "--history 0: want 2 to 1000"},
		{[]string{"sim", "host", "--gpus", "0"}, "--gpus 0: want 1 to"},
		{[]string{"connect"}, "connect needs one HOST"},
		{[]string{"connect", "a", "b"}, "connect needs one HOST"},
	} {
		_, _, err := runCLI(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestCockpitNeedsATerminal(t *testing.T) {
	// go test's stdout is a pipe, never a terminal.
	for _, args := range [][]string{{"connect", "local"}, {"demo"}} {
		_, _, err := runCLI(t, nil, args...)
		if err == nil || !strings.Contains(err.Error(), "needs a terminal") {
			t.Fatalf("%v: err = %v, want a plain 'needs a terminal' error", args, err)
		}
	}
}
