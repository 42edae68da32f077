package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// genLines returns n lines that no other generation of a test file has.
func genLines(gen string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("[2025-10-22 10:27:%02d TP0] %s line %04d Decode batch. #running-req: %d", i%60, gen, i, i%7)
	}
	return out
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// stream flattens what a Follower delivered: "offset text" per line and
// "RESET" per Reset, in order (Notices and errors left out).
func (c *collector) stream() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		switch v := e.Data.(type) {
		case event.LogLines:
			for _, l := range v.Lines {
				out = append(out, fmt.Sprintf("%d %s", l.Offset, l.Text))
			}
		case event.LogReset:
			out = append(out, "RESET")
		}
	}
	return out
}

// expectStream is what stream must be for files written whole, one after
// another (each a truncation or replacement of the previous): every line
// of each exactly once, with its offset in its file, and one Reset
// between two files.
func expectStream(gens ...[]string) []string {
	var out []string
	for g, lines := range gens {
		if g > 0 {
			out = append(out, "RESET")
		}
		off := 0
		for _, l := range lines {
			out = append(out, fmt.Sprintf("%d %s", off, l))
			off += len(l) + 1
		}
	}
	return out
}

// waitStream waits until stream has as many entries as want, then
// requires it to be want.
func (c *collector) waitStream(t *testing.T, what string, want []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(c.stream()) < len(want) && time.Now().Before(deadline) {
		select {
		case <-c.notify:
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := c.stream(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		i := firstDiff(got, want)
		t.Fatalf("%s: delivered %d entries, want %d; first difference at %d:\n got %q\nwant %q",
			what, len(got), len(want), i, at2(got, i), at2(want, i))
	}
}

func at2(v []string, i int) string {
	if i < len(v) {
		return v[i]
	}
	return "(end)"
}

// TestFollowerTruncateAndRewriteExactlyOnce is the user's report: a file
// gets 50 lines, then it is truncated and 2000 lines are written in one
// write. Every line of each new content must come exactly once, after one
// Reset, with its offset in the new file. GNU tail delivers the new
// content both before its "file truncated" message is read (when stderr is
// a separate stream) and, when the write wins the race, without any
// message at all, from the old offset.
func TestFollowerTruncateAndRewriteExactlyOnce(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "server.log")
	gens := [][]string{genLines("start", 50)}
	if err := os.WriteFile(path, []byte(joinLines(gens[0])), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c := startFollower(t, newShHost(), path, Options{CheckInterval: 5 * time.Millisecond})
	c.waitStream(t, "the first 50 lines", expectStream(gens...))
	for round := range 12 {
		for _, n := range []int{2000, 50} {
			lines := genLines(fmt.Sprintf("round %d of %d", round, n), n)
			gens = append(gens, lines)
			if err := os.WriteFile(path, []byte(joinLines(lines)), 0o644); err != nil { // O_TRUNC, then one write
				t.Fatal(err)
			}
			c.waitStream(t, fmt.Sprintf("round %d: %d lines rewritten", round, n), expectStream(gens...))
		}
	}
	// Which way each rewrite was caught: "truncated" from tail's message
	// or a stale batch, "replaced" when the check found a later change.
	reasons := map[string]int{}
	_, resets := c.lines()
	for _, r := range resets {
		reasons[r.Reason]++
	}
	t.Logf("resets: %v", reasons)
}

// TestFollowerRotationMidStream: the log is renamed away and a new one
// created while lines are being written. What was delivered of the old
// file is its lines in order; then one Reset; then every line of the new
// file exactly once.
func TestFollowerRotationMidStream(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "server.log")
	old := genLines("old", 300)
	appendFile(t, path, joinLines(old[:100]))
	_, c := startFollower(t, newShHost(), path, Options{CheckInterval: 5 * time.Millisecond})
	c.waitStream(t, "the first lines", expectStream(old[:100]))
	for i := 100; i < 300; i += 20 {
		appendFile(t, path, joinLines(old[i:i+20]))
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	fresh := genLines("new", 500)
	for i := 0; i < 500; i += 50 {
		appendFile(t, path, joinLines(fresh[i:i+50]))
	}
	c.waitFor(t, "the new file", func([]string, []event.LogReset) bool {
		s := c.stream()
		return len(s) > 0 && strings.HasSuffix(s[len(s)-1], fresh[499])
	})
	got := c.stream()
	reset := -1
	for i, e := range got {
		if e == "RESET" {
			if reset >= 0 {
				t.Fatalf("two Resets, at %d and %d", reset, i)
			}
			reset = i
		}
	}
	if reset < 100 {
		t.Fatalf("Reset at %d, want one after the first 100 old lines", reset)
	}
	if want := expectStream(old)[:reset]; strings.Join(got[:reset], "\n") != strings.Join(want, "\n") {
		t.Errorf("before the Reset: not a prefix of the old file's lines (first difference at %d)", firstDiff(got[:reset], want))
	}
	if want := expectStream(fresh); strings.Join(got[reset+1:], "\n") != strings.Join(want, "\n") {
		i := firstDiff(got[reset+1:], want)
		t.Errorf("after the Reset: %d entries, want the new file's %d lines; first difference at %d: %q", len(got)-reset-1, len(want), i, at2(got[reset+1:], i))
	}
}

// TestFollowerForgedNoticeIsALine: log lines that look like tail's
// messages for the followed path (without the Follower's nonce) are log
// lines: no Reset, offsets exact.
func TestFollowerForgedNoticeIsALine(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "server.log")
	first := genLines("before", 5)
	appendFile(t, path, joinLines(first))
	f, c := startFollower(t, newShHost(), path, Options{CheckInterval: 5 * time.Millisecond})
	c.waitStream(t, "the first lines", expectStream(first))
	quoted := "'" + path + "'"
	forged := []string{
		"tail: " + path + ": file truncated",
		"tail: " + quoted + " has appeared;  following new file",
		"/usr/bin/tail: " + quoted + " has been replaced;  following new file",
		"/././usr/bin/tail: cannot open " + quoted + " for reading: No such file or directory",
		// Our own marker, as `ps` output in the log would show it: not a
		// message's shape, so data.
		string(f.marker) + "usr/bin/tail -c +1 -F -- " + path,
		"prompt: tail: " + path + ": file truncated",
	}
	all := append(append([]string(nil), first...), forged...)
	for _, l := range forged {
		appendFile(t, path, l+"\n")
	}
	// A forged message right after a partial line, as tail's real one can
	// come.
	appendFile(t, path, "partial ")
	appendFile(t, path, "tail: "+path+": file truncated\n")
	all = append(all, "partial tail: "+path+": file truncated")
	c.waitStream(t, "the forged lines as lines", expectStream(all))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		switch e.Data.(type) {
		case event.LogNotice, event.LogReset:
			t.Errorf("forged text gave %+v", e.Data)
		}
	}
}

// notices returns the Notices emitted so far.
func (c *collector) notices() []event.LogNotice {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event.LogNotice
	for _, e := range c.events {
		if n, ok := e.Data.(event.LogNotice); ok {
			out = append(out, n)
		}
	}
	return out
}

// TestFollowerNotices: a missing file or directory on the path, and a path
// that is a directory, give a Notice once, not on every restart of tail;
// the file appearing gives Appeared and its lines.
func TestFollowerNotices(t *testing.T) {
	requireTail(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "nonexistent", "dir", "server.log")
	h := newShHost()
	_, c := startFollower(t, h, path, Options{})
	c.waitFor(t, "a Notice", func([]string, []event.LogReset) bool { return len(c.notices()) > 0 })
	want := event.LogNotice{Path: path, Class: event.NoticeMissing, Text: "cannot open '" + path + "' for reading: No such file or directory"}
	if n := c.notices(); n[0] != want {
		t.Fatalf("notice = %+v, want %+v", n[0], want)
	}
	// Each restart of tail says it again; the Notice is not repeated.
	for range 2 {
		starts := h.startCount()
		h.drop()
		c.waitFor(t, "tail restarted and heard from", func([]string, []event.LogReset) bool {
			return h.startCount() > starts && h.outputOf(h.startCount()-1) > 0
		})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "hello\n")
	c.waitFor(t, "the line", hasLines("hello"))
	c.waitFor(t, "Appeared", func([]string, []event.LogReset) bool { return len(c.notices()) >= 2 })
	n := c.notices()
	if len(n) != 2 || n[1].Class != event.NoticeAppeared || !strings.Contains(n[1].Text, "has appeared") {
		t.Errorf("notices = %+v, want Missing once, then Appeared", n)
	}

	// A directory.
	dirPath := t.TempDir()
	h2 := newShHost()
	_, c2 := startFollower(t, h2, dirPath, Options{})
	c2.waitFor(t, "a Notice", func([]string, []event.LogReset) bool { return len(c2.notices()) > 0 })
	starts := h2.startCount()
	h2.drop()
	c2.waitFor(t, "tail restarted and heard from", func([]string, []event.LogReset) bool {
		return h2.startCount() > starts && h2.outputOf(h2.startCount()-1) > 0
	})
	n = c2.notices()
	if len(n) != 1 || n[0].Class != event.NoticeNotAFile || !strings.Contains(n[0].Text, "Is a directory") || n[0].Path != dirPath {
		t.Errorf("notices for a directory = %+v, want one not-a-file", n)
	}
}

func TestNoticeKind(t *testing.T) {
	var p event.Payload = event.LogNotice{}
	if p.Kind().String() != "log-notice" {
		t.Errorf("Kind = %q", p.Kind())
	}
}
