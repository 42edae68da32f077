package follow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightdeck-dev/flightdeck/remote"
	"github.com/flightdeck-dev/flightdeck/sessions/event"
)

// scriptHost is a remote.Host double in which the test plays tail: each
// Start hands the test a stream to write, and stat and dd read an
// in-memory file. It makes the races of a real tail happen on cue.
type scriptHost struct {
	mu       sync.Mutex
	file     []byte
	exists   bool
	noDD     bool
	beforeDD func() // runs before a dd reads the file, without the lock
	tails    chan *scriptTail
	dds      int
}

type scriptTail struct {
	from  int64 // tail's -c +N, less one
	w     *io.PipeWriter
	r     *io.PipeReader
	errR  *io.PipeReader
	errW  *io.PipeWriter
	close sync.Once
}

func newScriptHost(file string) *scriptHost {
	return &scriptHost{file: []byte(file), exists: true, tails: make(chan *scriptTail, 16)}
}

func (h *scriptHost) Name() string { return "script" }

func (h *scriptHost) Watch(ctx context.Context) <-chan event.ConnState {
	ch := make(chan event.ConnState)
	go func() { <-ctx.Done(); close(ch) }()
	return ch
}

func (h *scriptHost) Close() error { return nil }

func (h *scriptHost) setFile(s string, exists bool) {
	h.mu.Lock()
	h.file, h.exists = []byte(s), exists
	h.mu.Unlock()
}

var (
	reSkip  = regexp.MustCompile(`skip=(\d+)`)
	reCount = regexp.MustCompile(`count=(\d+)`)
	reFrom  = regexp.MustCompile(` -c \+(\d+) -F `)
)

func (h *scriptHost) Run(ctx context.Context, cmd string, _ io.Reader) (remote.Result, error) {
	switch {
	case strings.Contains(cmd, " stat -L "):
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.exists {
			return remote.Result{}, &remote.ExitError{Code: 1, Stderr: []byte("stat: cannot statx: No such file or directory")}
		}
		return remote.Result{Stdout: fmt.Appendf(nil, "42 %d 81a4\n", len(h.file))}, nil
	case strings.Contains(cmd, " dd "):
		h.mu.Lock()
		h.dds++
		hook := h.beforeDD
		h.mu.Unlock()
		if hook != nil {
			hook()
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.noDD {
			return remote.Result{}, &remote.ExitError{Code: 127}
		}
		if !h.exists {
			return remote.Result{}, &remote.ExitError{Code: readMissing}
		}
		skip, _ := strconv.Atoi(reSkip.FindStringSubmatch(cmd)[1])
		count, _ := strconv.Atoi(reCount.FindStringSubmatch(cmd)[1])
		skip = min(skip, len(h.file))
		return remote.Result{Stdout: bytes.Clone(h.file[skip:min(len(h.file), skip+count)])}, nil
	}
	return remote.Result{}, fmt.Errorf("script host: unexpected command %q", cmd)
}

func (h *scriptHost) Start(ctx context.Context, cmd string) (remote.Process, error) {
	m := reFrom.FindStringSubmatch(cmd)
	if m == nil {
		return nil, fmt.Errorf("script host: unexpected command %q", cmd)
	}
	from, _ := strconv.ParseInt(m[1], 10, 64)
	t := &scriptTail{from: from - 1}
	t.r, t.w = io.Pipe()
	t.errR, t.errW = io.Pipe()
	context.AfterFunc(ctx, func() { t.Close() })
	h.tails <- t
	return t, nil
}

func (t *scriptTail) Stdout() io.Reader { return t.r }
func (t *scriptTail) Stderr() io.Reader { return t.errR }
func (t *scriptTail) Wait() error       { return nil }
func (t *scriptTail) Close() error {
	t.close.Do(func() {
		t.r.CloseWithError(io.EOF)
		t.w.CloseWithError(io.ErrClosedPipe)
		t.errW.Close()
	})
	return nil
}

// write is tail printing s. When the Follower has stopped this tail the
// rest is lost, as with a real tail.
func (t *scriptTail) write(_ testing.TB, s string) {
	_, _ = t.w.Write([]byte(s))
}

// nextTail waits for the Follower to start tail.
func (h *scriptHost) nextTail(t *testing.T) *scriptTail {
	t.Helper()
	select {
	case tl := <-h.tails:
		return tl
	case <-time.After(20 * time.Second):
		t.Fatal("tail was not started")
		return nil
	}
}

// message is what tail prints for text, given the Follower's marker.
func message(f *Follower, text string) string {
	return string(f.marker) + "usr/bin/tail: " + text + "\n"
}

// TestFollowerStaleBatchIsDropped: tail misses a truncation (the new
// content was written past the old size before it looked) and prints the
// new file from the old offset. The check finds the bytes before the
// offset changed and the file holding the batch there: the batch is
// dropped, Reset, and tail restarts at 0.
func TestFollowerStaleBatchIsDropped(t *testing.T) {
	old := joinLines(genLines("old", 50))
	h := newScriptHost(old)
	f, c := startFollower(t, h, "/logs/server.log", Options{CheckInterval: time.Millisecond})
	tl := h.nextTail(t)
	tl.write(t, old)
	c.waitStream(t, "the old lines", expectStream(genLines("old", 50)))

	fresh := joinLines(genLines("new", 2000))
	h.setFile(fresh, true)
	tl.write(t, fresh[len(old):]) // what tail prints when it misses the truncation
	tl2 := h.nextTail(t)
	if tl2.from != 0 {
		t.Fatalf("tail restarted at %d, want 0", tl2.from)
	}
	tl2.write(t, fresh)
	c.waitStream(t, "the new content once, after a Reset", expectStream(genLines("old", 50), genLines("new", 2000)))
	if _, r := c.lines(); r[0].Reason != "truncated" {
		t.Errorf("reset %+v", r[0])
	}
	if f.Offset() != int64(len(fresh)) {
		t.Errorf("offset %d, want %d", f.Offset(), len(fresh))
	}
}

// TestFollowerChangeAfterReadIsDelivered: the file is rewritten after tail
// read a batch (between the read and the check): the batch is the old
// file's, so it is delivered, then Reset, and tail restarts at 0.
func TestFollowerChangeAfterReadIsDelivered(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprintf("gone=%v", gone), func(t *testing.T) {
			a, b := genLines("a", 20), genLines("b", 5)
			h := newScriptHost(joinLines(a))
			f, c := startFollower(t, h, "/logs/server.log", Options{CheckInterval: time.Millisecond})
			tl := h.nextTail(t)
			tl.write(t, joinLines(a))
			c.waitStream(t, "the first lines", expectStream(a))

			fresh := genLines("fresh", 30)
			h.mu.Lock()
			h.file = append(h.file, joinLines(b)...)
			h.beforeDD = func() { // the rewrite lands before the check reads
				h.setFile(joinLines(fresh), !gone)
				h.mu.Lock()
				h.beforeDD = nil
				h.mu.Unlock()
			}
			h.mu.Unlock()
			tl.write(t, joinLines(b))
			tl2 := h.nextTail(t)
			if tl2.from != 0 {
				t.Fatalf("tail restarted at %d, want 0", tl2.from)
			}
			if gone {
				tl2.write(t, message(f, "cannot open '/logs/server.log' for reading: No such file or directory"))
				h.setFile(joinLines(fresh), true)
				tl2.write(t, message(f, "'/logs/server.log' has appeared;  following new file"))
			}
			tl2.write(t, joinLines(fresh))
			c.waitStream(t, "old batch, Reset, new file", expectStream(append(a, b...), fresh))
			want := "replaced"
			if gone {
				want = "missing"
			}
			if _, r := c.lines(); r[0].Reason != want {
				t.Errorf("reset %+v, want reason %q", r[0], want)
			}
			if n := c.notices(); gone && (len(n) != 2 || n[0].Class != event.NoticeMissing || n[1].Class != event.NoticeAppeared) {
				t.Errorf("notices %+v, want missing then appeared", n)
			}
		})
	}
}

// TestFollowerInBandMessages: tail's messages in the stream, cut anywhere
// by reads: a truncation after a partial line drops the partial line and
// resets right there; an informational message after a partial line
// leaves the line whole; an unknown message is a FollowError.
func TestFollowerInBandMessages(t *testing.T) {
	for _, pieces := range []int{1, 7, 1000} {
		t.Run(strconv.Itoa(pieces), func(t *testing.T) {
			h := newScriptHost("")
			h.noDD = true // no content checks: this is about tail's messages
			f, c := startFollower(t, h, "/logs/server.log", Options{})
			tl := h.nextTail(t)
			stream := "one\ntw" + message(f, "inotify resources exhausted") + "o\nthree\nunfinis" +
				message(f, "/logs/server.log: file truncated") + "new 1\nnew 2\n" +
				message(f, "something tail never said") + "new 3\n"
			h.setFile("new 1\nnew 2\nnew 3\n", true)
			// Written in pieces: the marker and messages are cut anywhere.
			r := rand.New(rand.NewPCG(uint64(pieces), 1))
			for rest := stream; len(rest) > 0; {
				n := min(len(rest), 1+r.IntN(max(1, 2*len(stream)/pieces)))
				tl.write(t, rest[:n])
				rest = rest[n:]
			}
			want := []string{"0 one", "4 two", "8 three", "RESET", "0 new 1", "6 new 2", "12 new 3"}
			c.waitStream(t, "the lines around the messages", want)
			c.waitFor(t, "the unknown message as an error", func([]string, []event.LogReset) bool {
				c.mu.Lock()
				defer c.mu.Unlock()
				for _, e := range c.events {
					if fe, ok := e.Data.(event.LogFollowError); ok && fe.Err == "something tail never said" {
						return true
					}
				}
				return false
			})
			if f.Offset() != 18 {
				t.Errorf("offset %d, want 18", f.Offset())
			}
		})
	}
}

// TestFollowerWithoutDD: a host without dd gets one FollowError and lines
// delivered unchecked.
func TestFollowerWithoutDD(t *testing.T) {
	h := newScriptHost("a\nb\n")
	h.noDD = true
	_, c := startFollower(t, h, "/logs/server.log", Options{Offset: 2, CheckInterval: time.Millisecond})
	tl := h.nextTail(t)
	tl.write(t, "b\n")
	tl.write(t, "c\n")
	c.waitStream(t, "the lines", []string{"2 b", "4 c"})
	n := 0
	c.mu.Lock()
	for _, e := range c.events {
		if fe, ok := e.Data.(event.LogFollowError); ok && strings.Contains(fe.Err, "dd not found") {
			n++
		}
	}
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d dd-not-found errors, want 1", n)
	}
}

// TestFollowerRewrittenWhileDisconnected: the file was rewritten in place
// to a larger size while tail was not running (same inode, size above the
// offset): the bytes before the offset tell, and reading restarts at 0.
func TestFollowerRewrittenWhileDisconnected(t *testing.T) {
	old := joinLines(genLines("old", 10))
	h := newScriptHost(old)
	_, c := startFollower(t, h, "/logs/server.log", Options{CheckInterval: time.Millisecond})
	tl := h.nextTail(t)
	tl.write(t, old)
	c.waitStream(t, "the old lines", expectStream(genLines("old", 10)))
	fresh := joinLines(genLines("new", 100))
	h.setFile(fresh, true)
	tl.Close() // the connection drops
	tl2 := h.nextTail(t)
	if tl2.from != 0 {
		t.Fatalf("tail restarted at %d, want 0", tl2.from)
	}
	tl2.write(t, fresh)
	c.waitStream(t, "Reset and the new file", expectStream(genLines("old", 10), genLines("new", 100)))
}

func TestSplitter(t *testing.T) {
	marker := nonceMarker()
	msg := func(text string) string { return string(marker) + "usr/bin/tail: " + text + "\n" }
	stream := "a/.\n" + "b" + msg("m1") + msg("m2") + "c/" + string(marker[:10]) + "x\n" +
		string(marker) + "usr/bin/tail -c +1 -F -- /x\n" + "d" + msg("m3") + "/"
	wantData := "a/.\nbc/" + string(marker[:10]) + "x\n" + string(marker) + "usr/bin/tail -c +1 -F -- /x\nd"
	r := rand.New(rand.NewPCG(3, 3))
	for round := range 500 {
		s := splitter{marker: marker}
		var data, msgs strings.Builder
		rest := []byte(stream)
		for len(rest) > 0 {
			n := 1 + r.IntN(len(stream)/(1+round%20)+1)
			n = min(n, len(rest))
			s.split(rest[:n], func(b []byte) { data.Write(b) }, func(m []byte) { fmt.Fprintf(&msgs, "[%s]", tailText(m)) })
			rest = rest[n:]
		}
		// The final "/" may start a marker: it waits for more.
		if data.String() != wantData || msgs.String() != "[m1][m2][m3]" || string(s.carry) != "/" {
			t.Fatalf("round %d: data %q messages %q carry %q", round, data.String(), msgs.String(), s.carry)
		}
	}
	// A "message" longer than any of tail's is data.
	s := splitter{marker: marker}
	var data bytes.Buffer
	long := string(marker) + "usr/bin/tail: " + strings.Repeat("z", maxMessage+10) + "\nok\n"
	s.split([]byte(long), func(b []byte) { data.Write(b) }, func(m []byte) { t.Errorf("message %.40q", m) })
	if data.String() != long {
		t.Errorf("long line lost bytes: %d of %d", data.Len(), len(long))
	}
}

func TestNonceMarker(t *testing.T) {
	a, b := nonceMarker(), nonceMarker()
	if bytes.Equal(a, b) || a[0] != '/' || len(a) < 65 || len(bytes.Trim(a, "./")) != 0 {
		t.Errorf("markers %q %q", a, b)
	}
}

// TestClassifyTail: GNU tail's messages (coreutils src/tail.c, LC_ALL=C).
func TestClassifyTail(t *testing.T) {
	for _, tc := range []struct {
		text string
		want tailEvent
	}{
		{"/d/server.log: file truncated", tailEvent{reset: "truncated"}},
		{"'/d/a b.log': file truncated", tailEvent{reset: "truncated"}},
		{"'/d/server.log' has been replaced;  following new file", tailEvent{reset: "replaced"}},
		{"'/d/server.log' has appeared;  following new file", tailEvent{reset: "rotated", notice: event.NoticeAppeared}},
		{"'/d/server.log' has become accessible", tailEvent{reset: "reopened", notice: event.NoticeAppeared}},
		{"cannot open '/d/server.log' for reading: No such file or directory", tailEvent{notice: event.NoticeMissing}},
		{"cannot open '/etc/passwd/x' for reading: Not a directory", tailEvent{notice: event.NoticeMissing}},
		{"cannot open '/d/server.log' for reading: Permission denied", tailEvent{notice: event.NoticeInaccessible}},
		{"'/d/server.log' has become inaccessible: No such file or directory", tailEvent{notice: event.NoticeMissing}},
		{"'/d/server.log' has become inaccessible: Permission denied", tailEvent{notice: event.NoticeInaccessible}},
		{"error reading '/tmp': Is a directory", tailEvent{notice: event.NoticeNotAFile}},
		{"/tmp: cannot follow end of this type of file", tailEvent{notice: event.NoticeNotAFile}},
		{"'/d/server.log' has been replaced with an untailable file; giving up on this name", tailEvent{notice: event.NoticeNotAFile}},
		{"'/d/server.log' has been replaced with an untailable symbolic link", tailEvent{notice: event.NoticeNotAFile}},
		{"'/d/server.log': Permission denied", tailEvent{notice: event.NoticeInaccessible}},
		{"/d/server.log: No such file or directory", tailEvent{notice: event.NoticeMissing}},
		{"inotify cannot be used, reverting to polling: Too many open files", tailEvent{quiet: true}},
		{"inotify resources exhausted", tailEvent{quiet: true}},
		{"directory containing watched file was removed", tailEvent{quiet: true}},
		{"no files remaining", tailEvent{}},
		{"error writing 'standard output': Broken pipe", tailEvent{}},
	} {
		if got := classifyTail(tc.text); got != tc.want {
			t.Errorf("classifyTail(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
}
