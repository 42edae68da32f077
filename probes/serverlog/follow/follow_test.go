package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/probes/serverlog"
	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// shHost is a remote.Host test double that runs commands locally with
// `sh -c`. drop kills every running command the way a lost SSH connection
// ends them (Wait then wraps remote.ErrDisconnected), and setDown makes new
// calls fail as while reconnecting.
type shHost struct {
	mu      sync.Mutex
	procs   map[*shProc]struct{}
	down    bool
	starts  []string
	started []*shProc // in start order
}

func newShHost() *shHost { return &shHost{procs: map[*shProc]struct{}{}} }

func (h *shHost) Name() string { return "sh-test" }

func (h *shHost) Watch(ctx context.Context) <-chan event.ConnState {
	ch := make(chan event.ConnState, 1)
	ch <- event.ConnState{Host: h.Name(), Conn: event.Connected}
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

func (h *shHost) Close() error { h.drop(); return nil }

func (h *shHost) setDown(down bool) {
	h.mu.Lock()
	h.down = down
	h.mu.Unlock()
}

func (h *shHost) isDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

func (h *shHost) Run(ctx context.Context, cmd string, stdin io.Reader) (remote.Result, error) {
	if h.isDown() {
		return remote.Result{}, fmt.Errorf("sh-test: %w", remote.ErrDisconnected)
	}
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = stdin, &out, &errb
	err := c.Run()
	res := remote.Result{Stdout: out.Bytes(), Stderr: errb.Bytes()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.ExitCode()
		return res, &remote.ExitError{Code: ee.ExitCode(), Stderr: errb.Bytes()}
	}
	return res, err
}

func (h *shHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	if h.isDown() {
		return nil, fmt.Errorf("sh-test: %w", remote.ErrDisconnected)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c := exec.Command("sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr = outW, errW
	if err := c.Start(); err != nil {
		return nil, err
	}
	outW.Close()
	errW.Close()
	p := &shProc{cmd: c, stdout: outR, stderr: errR, done: make(chan struct{})}
	h.mu.Lock()
	h.procs[p] = struct{}{}
	h.starts = append(h.starts, cmd)
	h.started = append(h.started, p)
	h.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { p.kill(false) })
	go func() {
		p.err = c.Wait()
		stop()
		close(p.done)
		h.mu.Lock()
		delete(h.procs, p)
		h.mu.Unlock()
	}()
	return p, nil
}

// drop kills every running command as a dropped connection would.
func (h *shHost) drop() {
	h.mu.Lock()
	procs := make([]*shProc, 0, len(h.procs))
	for p := range h.procs {
		procs = append(procs, p)
	}
	h.mu.Unlock()
	for _, p := range procs {
		p.kill(true)
	}
}

func (h *shHost) startCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.starts)
}

// outputOf returns how many bytes the i-th started command's stdout has
// given its reader.
func (h *shHost) outputOf(i int) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started[i].read.Load()
}

type shProc struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File
	read           atomic.Int64 // bytes read from stdout
	done           chan struct{}
	err            error
	mu             sync.Mutex
	dropped        bool
	closeOnce      sync.Once
}

func (p *shProc) Stdout() io.Reader { return countingReader{p.stdout, &p.read} }
func (p *shProc) Stderr() io.Reader { return p.stderr }

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func (p *shProc) kill(dropped bool) {
	p.mu.Lock()
	p.dropped = p.dropped || dropped
	p.mu.Unlock()
	select {
	case <-p.done:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (p *shProc) Wait() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		return fmt.Errorf("sh-test: %w", remote.ErrDisconnected)
	}
	return p.err
}

func (p *shProc) Close() error {
	p.closeOnce.Do(func() {
		p.kill(false)
		p.stdout.Close()
		p.stderr.Close()
	})
	return nil
}

// collector records what a Follower emits.
type collector struct {
	mu     sync.Mutex
	events []event.Event
	notify chan struct{}
}

func newCollector() *collector { return &collector{notify: make(chan struct{}, 1)} }

func (c *collector) sink(e event.Event) {
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// lines returns the text of every delivered line after the last Reset, and
// the number of Resets.
func (c *collector) lines() (after []string, resets []event.LogReset) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		switch v := e.Data.(type) {
		case event.LogLines:
			for _, l := range v.Lines {
				after = append(after, string(l.Text))
			}
		case event.LogReset:
			resets = append(resets, v)
			after = nil
		}
	}
	return after, resets
}

// waitFor polls until cond holds, failing the test after a deadline.
func (c *collector) waitFor(t *testing.T, what string, cond func(lines []string, resets []event.LogReset) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		l, r := c.lines()
		if cond(l, r) {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; have lines %q, resets %+v", what, l, r)
		case <-c.notify:
		case <-tick.C:
		}
	}
}

func hasLines(want ...string) func([]string, []event.LogReset) bool {
	return func(l []string, _ []event.LogReset) bool { return len(l) >= len(want) }
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// startFollower runs a Follower until the test ends.
func startFollower(t *testing.T, h remote.Host, path string, opts Options) (*Follower, *collector) {
	t.Helper()
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 5*time.Millisecond, 50*time.Millisecond
	}
	c := newCollector()
	f := New(h, path, c.sink, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	})
	return f, c
}

func requireTail(t *testing.T) {
	t.Helper()
	out, err := exec.Command("tail", "--version").Output()
	if err != nil || !bytes.Contains(out, []byte("GNU coreutils")) {
		t.Skip("GNU tail not available")
	}
}

func TestFollowerResumesExactlyOnce(t *testing.T) {
	requireTail(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "server log.txt") // a space, to exercise quoting
	appendFile(t, path, "l1\nl2\nl3\npartial")
	h := newShHost()
	f, c := startFollower(t, h, path, Options{})

	c.waitFor(t, "the three complete lines", hasLines("l1", "l2", "l3"))
	if got, _ := c.lines(); strings.Join(got, ",") != "l1,l2,l3" {
		t.Fatalf("lines = %q; the partial line must be held", got)
	}
	if f.Offset() != 9 {
		t.Fatalf("offset = %d, want 9 (after l3)", f.Offset())
	}

	// The connection drops; the file grows while we are away.
	starts := h.startCount()
	h.drop()
	appendFile(t, path, "-end\nl5\n")
	c.waitFor(t, "the partial line completed after the reconnect", hasLines("l1", "l2", "l3", "partial-end", "l5"))
	if h.startCount() <= starts {
		t.Fatalf("tail was not restarted")
	}

	// Many drops while lines keep coming.
	want := []string{"l1", "l2", "l3", "partial-end", "l5"}
	for i := range 300 {
		line := fmt.Sprintf("line %03d %s", i, strings.Repeat("x", i%37))
		want = append(want, line)
		if i%2 == 0 {
			appendFile(t, path, line+"\n")
		} else {
			// Write a line in two pieces, the newline in the second.
			appendFile(t, path, line[:len(line)/2])
			appendFile(t, path, line[len(line)/2:]+"\n")
		}
		if i%25 == 0 {
			h.drop()
		}
	}
	c.waitFor(t, "all 305 lines", func(l []string, _ []event.LogReset) bool { return len(l) >= len(want) })
	got, resets := c.lines()
	if len(resets) != 0 {
		t.Fatalf("unexpected resets %+v", resets)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("delivered lines differ from the file:\n got %d lines\nwant %d lines\nfirst diff at %d", len(got), len(want), firstDiff(got, want))
	}
	size := fileSize(t, path)
	c.waitFor(t, "offset at end of file", func([]string, []event.LogReset) bool { return f.Offset() == size })

	// Every Line's Offset points at its text in the file.
	data, _ := os.ReadFile(path)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.events {
		if ls, ok := e.Data.(event.LogLines); ok {
			for _, l := range ls.Lines {
				if !bytes.HasPrefix(data[l.Offset:], append(append([]byte(nil), l.Text...), '\n')) {
					t.Fatalf("line %q has offset %d, file has %q there", l.Text, l.Offset, data[l.Offset:min(len(data), int(l.Offset)+20)])
				}
			}
		}
	}
}

func TestFollowerBatchesLines(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "big.log")
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "[2025-10-22 10:27:57 TP0] line %d\n", i)
	}
	appendFile(t, path, b.String())
	_, c := startFollower(t, newShHost(), path, Options{MaxBatch: 1000})
	c.waitFor(t, "5000 lines", func(l []string, _ []event.LogReset) bool { return len(l) >= 5000 })
	c.mu.Lock()
	defer c.mu.Unlock()
	batches := 0
	for _, e := range c.events {
		if ls, ok := e.Data.(event.LogLines); ok {
			batches++
			if len(ls.Lines) > 1000 {
				t.Errorf("a batch of %d lines, over MaxBatch", len(ls.Lines))
			}
		}
	}
	if batches >= 500 {
		t.Errorf("5000 lines available at once came in %d events; they should be batched", batches)
	}
}

func TestFollowerTruncation(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "t.log")
	appendFile(t, path, "aaaa\nbbbb\n")
	f, c := startFollower(t, newShHost(), path, Options{})
	c.waitFor(t, "the first lines", hasLines("aaaa", "bbbb"))
	if err := os.WriteFile(path, []byte("c\n"), 0o644); err != nil { // truncate and rewrite, shorter
		t.Fatal(err)
	}
	c.waitFor(t, "a reset and the new content", func(l []string, r []event.LogReset) bool {
		return len(r) > 0 && strings.Join(l, ",") == "c"
	})
	_, resets := c.lines()
	if resets[0].Reason != "truncated" || resets[0].Offset != 0 {
		t.Errorf("reset = %+v, want truncated at 0", resets[0])
	}
	if r := resets[0]; r.Unwatched || r.Delivered != 10 || strings.Contains(r.Words(), "missing") {
		t.Errorf("reset = %+v (%s), want one seen while watched, after 10 bytes", r, r.Words())
	}
	appendFile(t, path, "d\n")
	c.waitFor(t, "the next line", func(l []string, _ []event.LogReset) bool { return strings.Join(l, ",") == "c,d" })
	c.waitFor(t, "offset 4", func([]string, []event.LogReset) bool { return f.Offset() == 4 })
}

func TestFollowerRotation(t *testing.T) {
	requireTail(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "r.log")
	appendFile(t, path, "old1\nold2\n")
	_, c := startFollower(t, newShHost(), path, Options{})
	c.waitFor(t, "the old lines", hasLines("old1", "old2"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "new1\n")
	c.waitFor(t, "a reset and the new file", func(l []string, r []event.LogReset) bool {
		return len(r) > 0 && strings.Join(l, ",") == "new1"
	})
	appendFile(t, path, "new2\n")
	c.waitFor(t, "the next line of the new file", func(l []string, _ []event.LogReset) bool { return strings.Join(l, ",") == "new1,new2" })
	_, resets := c.lines()
	for _, r := range resets {
		if r.Reason != "rotated" && r.Reason != "replaced" {
			t.Errorf("reset reason %q, want rotated or replaced", r.Reason)
		}
	}
}

func TestFollowerRotatedOrTruncatedWhileDisconnected(t *testing.T) {
	requireTail(t)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		reason string
		missed int64 // bytes of the old file never delivered, per the rotated copy; -1: no copy
	}{
		{"rotated", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			appendFile(t, path, "new1\nnew2\nnew3\n") // longer than the old file: only the inode tells
		}, "rotated", 0},
		{"truncated", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("n\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "truncated", -1},
		{"copytruncate", func(t *testing.T, path string) {
			// The server wrote two more lines while the link was down, then
			// logrotate's copytruncate copied the file and cut it.
			appendFile(t, path, "old3\nold4\n")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path+".1", b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("n\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "truncated", int64(len("old3\nold4\n"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.log")
			appendFile(t, path, "old1\nold2\n")
			h := newShHost()
			_, c := startFollower(t, h, path, Options{})
			c.waitFor(t, "the old lines", hasLines("old1", "old2"))
			h.setDown(true)
			h.drop()
			tc.change(t, path)
			h.setDown(false)
			c.waitFor(t, "a reset", func(_ []string, r []event.LogReset) bool { return len(r) > 0 })
			want, _ := os.ReadFile(path)
			c.waitFor(t, "the new content", func(l []string, _ []event.LogReset) bool {
				return strings.Join(l, "\n")+"\n" == string(want)
			})
			_, resets := c.lines()
			if len(resets) != 1 || resets[0].Reason != tc.reason {
				t.Fatalf("resets = %+v, want one %q", resets, tc.reason)
			}
			// It happened unwatched: lines after the delivered bytes may be
			// missing, and the rotated copy says how many bytes.
			if r := resets[0]; !r.Unwatched || r.Delivered != int64(len("old1\nold2\n")) || r.Missed != tc.missed {
				t.Errorf("reset %+v, want unwatched, 10 bytes delivered, %d missed", r, tc.missed)
			}
			if w := resets[0].Words(); !strings.Contains(w, "may be missing") || !strings.Contains(w, "after byte 10") {
				t.Errorf("reset words %q", w)
			}
		})
	}
}

func TestFollowerWaitsForMissingFile(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "later.log")
	_, c := startFollower(t, newShHost(), path, Options{})
	appendFile(t, path, "first\nsecond\n")
	c.waitFor(t, "the lines of the new file", hasLines("first", "second"))
	got, _ := c.lines()
	if strings.Join(got, ",") != "first,second" {
		t.Errorf("lines = %q", got)
	}
}

func TestFollowerBacklog(t *testing.T) {
	requireTail(t)
	path := filepath.Join(t.TempDir(), "b.log")
	appendFile(t, path, "line-1\nline-2\nline-3\nline-4\n") // 7 bytes a line
	_, c := startFollower(t, newShHost(), path, Options{Backlog: 10})
	// The last 10 bytes start inside line-3; it is dropped, line-4 is whole.
	c.waitFor(t, "the last line", hasLines("line-4"))
	appendFile(t, path, "line-5\n")
	c.waitFor(t, "the next line", hasLines("line-4", "line-5"))
	got, _ := c.lines()
	if strings.Join(got, ",") != "line-4,line-5" {
		t.Errorf("lines = %q, want line-4,line-5", got)
	}

	path2 := filepath.Join(t.TempDir(), "b2.log")
	appendFile(t, path2, "line-1\nline-2\nline-3\nline-4\n")
	_, c2 := startFollower(t, newShHost(), path2, Options{Backlog: 14}) // exactly the last two lines
	c2.waitFor(t, "the last two lines", hasLines("line-3", "line-4"))
	if got, _ := c2.lines(); strings.Join(got, ",") != "line-3,line-4" {
		t.Errorf("lines = %q, want line-3,line-4", got)
	}
}

func TestFollowerRejectsUnquotablePath(t *testing.T) {
	f := New(newShHost(), "/tmp/a\nb", func(event.Event) {}, Options{})
	if err := f.Run(context.Background()); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a newline in the path = %v, want a quoting error", err)
	}
}

func TestFollowerCommandIsQuoted(t *testing.T) {
	requireTail(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "$(touch pwned) 'x'.log")
	appendFile(t, path, "ok\n")
	h := newShHost()
	_, c := startFollower(t, h, path, Options{})
	c.waitFor(t, "the line", hasLines("ok"))
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("the path was run as a command")
	}
	h.mu.Lock()
	cmd := h.starts[0]
	h.mu.Unlock()
	if !strings.Contains(cmd, `exec "/`) || !strings.Contains(cmd, `${p#/}" -c +1 -F -- `) || !strings.HasSuffix(cmd, " 2>&1") {
		t.Errorf("command = %q", cmd)
	}
}

func TestLineReader(t *testing.T) {
	var r lineReader
	lines, n := r.feed([]byte("ab"), 0)
	if len(lines) != 0 || n != 0 {
		t.Fatalf("partial: %v %d", lines, n)
	}
	lines, n = r.feed([]byte("c\nde\nf"), 0)
	if len(lines) != 2 || string(lines[0].Text) != "abc" || lines[0].Offset != 0 || string(lines[1].Text) != "de" || lines[1].Offset != 4 || n != 7 {
		t.Fatalf("got %+v consumed %d", lines, n)
	}
	lines, n = r.feed([]byte("\n"), 7)
	if len(lines) != 1 || string(lines[0].Text) != "f" || lines[0].Offset != 7 || n != 2 {
		t.Fatalf("got %+v consumed %d", lines, n)
	}

	// A line over serverlog.MaxLineBytes is delivered cut, and the offset still
	// spans all of it.
	var long lineReader
	big := bytes.Repeat([]byte("x"), serverlog.MaxLineBytes+500)
	long.feed(big[:serverlog.MaxLineBytes/2], 0)
	long.feed(big[serverlog.MaxLineBytes/2:], 0)
	lines, n = long.feed([]byte("\nnext\n"), 0)
	if len(lines) != 2 || len(lines[0].Text) != serverlog.MaxLineBytes || n != int64(len(big))+6 || lines[1].Offset != int64(len(big))+1 {
		t.Fatalf("long line: %d lines, first %d bytes, consumed %d", len(lines), len(lines[0].Text), n)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
