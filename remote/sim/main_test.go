package sim

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets the wrappers the tests write re-execute this test binary
// as nvidia-smi or the server.
func TestMain(m *testing.M) {
	RunRoleFromEnv()
	// Under -race every process sleeps 1 s at exit (atexit_sleep_ms); the
	// roles this binary re-executes as would each pay it.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// waitFor polls cond every 10 ms until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// csvTable is an independent reading of nvidia-smi --format=csv output:
// split on ", ", header names with their "[unit]" kept apart.
type csvTable struct {
	names, units []string
	rows         [][]string
}

func parseSMICSV(t *testing.T, out string, header bool) csvTable {
	t.Helper()
	var tab csvTable
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if header {
		for _, h := range strings.Split(lines[0], ", ") {
			name, unit, _ := strings.Cut(h, " [")
			tab.names = append(tab.names, name)
			tab.units = append(tab.units, strings.TrimSuffix(unit, "]"))
		}
		lines = lines[1:]
	}
	for _, l := range lines {
		tab.rows = append(tab.rows, strings.Split(l, ", "))
	}
	return tab
}
