package follow

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	ossignal "os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
)

// testAgentEnv makes the test binary run as `flightdeck agent follow`
// (runTestAgent): the agent's library code, without building the binary.
const testAgentEnv = "FLIGHTDECK_FOLLOW_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(testAgentEnv) == "1" {
		os.Exit(runTestAgent(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runTestAgent is cmd/flightdeck's `agent follow` for the tests: args are
// "agent", "follow", then its flags, "--" and the path.
func runTestAgent(args []string) int {
	if len(args) < 2 || args[0] != "agent" || args[1] != "follow" {
		fmt.Fprintf(os.Stderr, "test agent: unknown command %q\n", args)
		return 2
	}
	fs := flag.NewFlagSet("follow", flag.ContinueOnError)
	var o StreamOptions
	marker := fs.String("marker", "", "")
	anchor := fs.String("anchor", "", "")
	fs.Int64Var(&o.Offset, "offset", 0, "")
	fs.DurationVar(&o.Poll, "poll", 20*time.Millisecond, "")
	fs.DurationVar(&o.Keepalive, "keepalive", 0, "")
	if err := fs.Parse(args[2:]); err != nil || fs.NArg() != 1 {
		fmt.Fprintf(os.Stderr, "test agent: bad arguments %q\n", args)
		return 2
	}
	a, err := hex.DecodeString(*anchor)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test agent:", err)
		return 2
	}
	o.Path, o.Marker, o.Anchor = fs.Arg(0), []byte(*marker), a
	ctx, stop := ossignal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := StreamFile(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "test agent:", err)
		return 1
	}
	return 0
}

// testAgent is a remote.Agent whose command runs this test binary as the
// agent, behind a launcher that writes the launch line as the real one
// does (agent.Runner's runScript).
type testAgent struct {
	wrap  []string      // run the agent under this command (e.g. strace)
	ready chan struct{} // when set, AgentCommand waits for it to be closed
	err   error         // when set, AgentCommand's error (wrapping remote.ErrNoAgent)
	cmd   string        // when set, the command line instead (a broken agent)

	mu    sync.Mutex
	calls int
}

func (a *testAgent) AgentCommand(ctx context.Context, args ...string) (string, error) {
	if a.ready != nil {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-a.ready:
		}
	}
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	if a.err != nil {
		return "", a.err
	}
	if a.cmd != "" {
		return a.cmd, nil
	}
	bin, err := os.Executable()
	if err != nil {
		return "", err
	}
	argv := append(append([]string{"-c", `printf '{"t":"launch","pid":%s}\n' "$$"; exec env ` + testAgentEnv + `=1 "$@"`, "sh"}, a.wrap...), bin)
	return remote.Command("sh", append(argv, args...)...)
}

// countingHost counts the commands a Follower runs on a host.
type countingHost struct {
	remote.Host
	mu     sync.Mutex
	runs   []string
	starts []string
}

func (h *countingHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	h.mu.Lock()
	h.runs = append(h.runs, cmd)
	h.mu.Unlock()
	return h.Host.Run(ctx, cmd, stdin)
}

func (h *countingHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	h.mu.Lock()
	h.starts = append(h.starts, cmd)
	h.mu.Unlock()
	return h.Host.Start(ctx, cmd)
}

// counts returns how many commands were run and started so far.
func (h *countingHost) counts() (runs, starts int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.runs), len(h.starts)
}

func noAgent() *testAgent {
	return &testAgent{err: fmt.Errorf("%w: test", remote.ErrNoAgent)}
}
