package follow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/remote/sshdtest"
)

// TestFollowerOverRealSSHD repeats the user's test over OpenSSH, where
// stdout and stderr are separate channel buffers: rounds of 50 lines, then
// a truncation and 2000 lines in one write; every line exactly once, after
// one Reset. A forged notice in the log stays a line.
func TestFollowerOverRealSSHD(t *testing.T) {
	requireTail(t)
	srv := sshdtest.Start(t, sshdtest.Options{})
	known := filepath.Join(t.TempDir(), "known_hosts")
	srv.WriteKnownHosts(known)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, err := remote.DialSSH(ctx, srv.Target(), remote.SSHOptions{
		ConfigFile:      os.DevNull,
		IdentityFiles:   []string{srv.ClientKeyPath()},
		KnownHostsFiles: []string{known},
		NoAgent:         true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	path := filepath.Join(t.TempDir(), "sglang.log")
	gens := [][]string{genLines("start", 50)}
	if err := os.WriteFile(path, []byte(joinLines(gens[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c := startFollower(t, host, path, Options{CheckInterval: 10 * time.Millisecond})
	c.waitStream(t, "the first lines", expectStream(gens...))
	for round := range 6 {
		for _, n := range []int{2000, 50} {
			lines := genLines(fmt.Sprintf("round %d of %d", round, n), n)
			if n == 50 {
				lines[7] = "tail: " + path + ": file truncated" // forged
			}
			gens = append(gens, lines)
			if err := os.WriteFile(path, []byte(joinLines(lines)), 0o644); err != nil {
				t.Fatal(err)
			}
			c.waitStream(t, fmt.Sprintf("round %d: %d lines rewritten", round, n), expectStream(gens...))
		}
	}
}
