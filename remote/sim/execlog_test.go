package sim

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExecsSince: the SSH server logs each command it starts, with its
// shell's pid; a refused second exec on one channel and a session that
// never execs log nothing.
func TestExecsSince(t *testing.T) {
	h := startHost(t, Options{})
	c := dial(t, h)
	if _, err := run(t, c, "true"); err != nil {
		t.Fatal(err)
	}
	mark := time.Now()
	if n := len(h.ExecsSince(mark)); n != 0 {
		t.Fatalf("%d execs since the mark, want 0", n)
	}
	out, err := run(t, c, "echo $$")
	if err != nil {
		t.Fatalf("echo $$: %q, %v", out, err)
	}
	s, err := c.NewSession() // opened, closed, no exec
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := run(t, c, "exit 3"); err == nil {
		t.Fatal("exit 3 succeeded")
	}
	got := h.ExecsSince(mark)
	if len(got) != 2 || got[0].Command != "echo $$" || got[1].Command != "exit 3" {
		t.Fatalf("execs since the mark = %+v, want echo $$ and exit 3", got)
	}
	if strconv.Itoa(got[0].PID) != strings.TrimSpace(out) || got[0].Time.Before(mark) || got[1].Time.Before(got[0].Time) {
		t.Errorf("execs = %+v", got)
	}
	if all := h.ExecsSince(time.Time{}); len(all) != 3 || all[0].Command != "true" {
		t.Errorf("every exec = %+v", all)
	}
}

// TestExecLogKeepsTheLatest: past maxExecLog the oldest half goes.
func TestExecLogKeepsTheLatest(t *testing.T) {
	var l execLog
	t0 := time.Unix(1000, 0)
	for i := range maxExecLog + 1 {
		l.add(Exec{Time: t0.Add(time.Duration(i) * time.Second), PID: i})
	}
	all := l.since(time.Time{})
	if len(all) != maxExecLog/2+1 || all[len(all)-1].PID != maxExecLog || all[0].PID != maxExecLog/2 {
		t.Fatalf("kept %d, from pid %d to %d", len(all), all[0].PID, all[len(all)-1].PID)
	}
	if got := l.since(t0.Add(time.Duration(maxExecLog) * time.Second)); len(got) != 1 {
		t.Errorf("since the last one: %d", len(got))
	}
}
