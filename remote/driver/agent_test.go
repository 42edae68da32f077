package driver

// Test support for the stream path: the test binary plays `flightdeck
// agent lock` on the host (ServeLock, as the real subcommand runs it), a
// remote.Agent that hands out its command line, and a Host that counts
// the SSH sessions it opens.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// roleEnv makes the test binary run ServeLock with its arguments after
// "agent lock" (set by testAgent's command line); rolePIDs names a file
// each such process appends its pid to.
const (
	roleEnv  = "FLIGHTDECK_TEST_AGENT_LOCK"
	rolePIDs = "FLIGHTDECK_TEST_AGENT_LOCK_PIDS"
)

func init() {
	if os.Getenv(roleEnv) == "1" {
		os.Exit(agentRole(os.Args[1:]))
	}
}

// agentRole is `flightdeck agent lock` in the test binary: args are
// "agent", "lock" and the subcommand's flags.
func agentRole(args []string) int {
	if len(args) < 2 || args[0] != "agent" || args[1] != "lock" {
		fmt.Fprintf(os.Stderr, "agent role: unexpected arguments %q\n", args)
		return 2
	}
	var o LockAgentOptions
	put := ""
	fs := flag.NewFlagSet("agent lock", flag.ContinueOnError)
	fs.StringVar(&o.File, "file", "", "")
	fs.StringVar(&o.Mutex, "mutex", "flock", "")
	fs.StringVar(&put, "put", "", "")
	fs.StringVar(&o.Want, "want", "", "")
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "put" {
			o.Drive, o.Content = true, []byte(put)
		}
	})
	if p := os.Getenv(rolePIDs); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	if err := ServeLock(context.Background(), os.Stdin, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "agent lock:", err)
		return 1
	}
	return 0
}

// testAgent is a remote.Agent whose command runs the test binary as the
// agent (after the launcher's {"t":"launch"} line), optionally under wrap
// (strace); err, when set, is AgentCommand's answer instead.
type testAgent struct {
	t     *testing.T
	wrap  func(n int) []string // the n-th command's wrapper (from 1), or nil
	pids  string               // rolePIDs's file
	err   atomic.Pointer[error]
	calls atomic.Int32
}

func newTestAgent(t *testing.T) *testAgent {
	return &testAgent{t: t, pids: t.TempDir() + "/pids"}
}

func (a *testAgent) AgentCommand(ctx context.Context, args ...string) (string, error) {
	n := int(a.calls.Add(1))
	if e := a.err.Load(); e != nil {
		return "", *e
	}
	bin, err := os.Executable()
	if err != nil {
		return "", err
	}
	var argv []string
	if a.wrap != nil {
		argv = a.wrap(n)
	}
	argv = append(append(argv, bin), args...)
	cmd, err := remote.Command(argv[0], argv[1:]...)
	if err != nil {
		return "", err
	}
	pids, err := remote.Quote(a.pids)
	if err != nil {
		return "", err
	}
	return `printf '{"t":"launch","pid":%s}\n' "$$"; export ` + roleEnv + `=1 ` + rolePIDs + `=` + pids + `; exec ` + cmd, nil
}

// pidList is the pids of the agents started so far.
func (a *testAgent) pidList() []int {
	b, _ := os.ReadFile(a.pids)
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// counting is a Host that counts the sessions it opens (Run and Start).
type counting struct {
	remote.Host
	runs, starts atomic.Int32
}

func (c *counting) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	c.runs.Add(1)
	return c.Host.Run(ctx, cmd, stdin)
}

func (c *counting) Start(ctx context.Context, cmd string) (remote.Process, error) {
	c.starts.Add(1)
	return c.Host.Start(ctx, cmd)
}

func (c *counting) StartInput(ctx context.Context, cmd string) (remote.Process, io.WriteCloser, error) {
	c.starts.Add(1)
	return c.Host.(remote.InputStarter).StartInput(ctx, cmd)
}

// sessions is how many sessions c opened so far.
func (c *counting) sessions() int { return int(c.runs.Load() + c.starts.Load()) }

// eventually waits (wait at most) until ok, polling.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until none of hosts opened a session for 5 heartbeats
// (streams started, first lines in): the steady state the tests measure.
func settle(t *testing.T, every time.Duration, hosts ...*counting) {
	t.Helper()
	sum := func() (n int) {
		for _, h := range hosts {
			n += h.sessions()
		}
		return n
	}
	deadline := time.Now().Add(wait)
	for {
		n := sum()
		time.Sleep(5 * every)
		if sum() == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hosts never settled: %d sessions", sum())
		}
	}
}
